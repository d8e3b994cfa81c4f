package main

import "warrant/launcher/linux"

// launch is the Linux launcher's fixed sequence (see launcher/linux).
func launch() int { return linux.Main() }

package main

import "warrant/launcher/darwin"

func launch() int { return darwin.Main() }

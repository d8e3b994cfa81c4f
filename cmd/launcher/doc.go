// Command launcher is warrant's one-shot launcher: it reads one
// SpawnRequest from fd 3, re-verifies it, confines itself and executes the
// approved bytes, or replies Refused and exits without exec. It has no
// flags, no config and no logging; the broker is its only caller.
package main

// Package linux is the Linux launcher: it turns one verified SpawnRequest
// into one confined execveat, or refuses.
package linux

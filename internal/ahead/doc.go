// Package ahead keeps one value made in the background ahead of its use,
// so that the path that needs it takes it ready instead of waiting for
// it to be made: the broker's spare cgroup directories, its actions'
// spare private directories and its warm launcher.
//
// One holds at most one ready value and makes at most one at a time.
// Take returns the ready value, if any, waiting for the make in flight
// when one is being made (it has a head start on any the caller could
// begin), and TakeReady does not wait; Refill starts making the next one unless one is ready or being
// made. A failed make leaves nothing
// ready: the caller makes its own, and the next Refill tries again.
// Close stops refills, waits for the one in flight and for the
// background work Go started, and discards what is ready. Nothing is
// ever made twice for one Take, and no value outlives Close.
package ahead

// Package retry is warrant's one retry of a system call that was
// interrupted (EINTR) or raced (EAGAIN), shared by the launcher and the
// broker so that every such loop has the same bound and meaning.
//
// Every call is retried on EINTR; EAGAIN is retried only by EAGAIN, where
// the caller knows it means "try again" (openat2 with RESOLVE_* flags, when
// a rename or mount raced the lookup) and not "nothing yet" (a
// non-blocking read). At most Bound calls are made; after that the last
// error is returned, so that a caller fails as it would on any other
// error instead of spinning. Go installs its signal handlers with
// SA_RESTART, so EINTR is rare and Bound is never reached in practice.
//
// It is not for waits (wait4, waitid, a kevent without timeout): a wait
// that gave up would report an event that did not happen.
package retry

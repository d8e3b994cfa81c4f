package policy

import "golang.org/x/sys/unix"

// openNoSymlinks opens p for reading (macOS has no O_PATH) without
// blocking, refusing a symlink anywhere in it (O_NOFOLLOW_ANY).
func openNoSymlinks(p string) (int, error) {
	return unix.Open(p, unix.O_RDONLY|unix.O_NOFOLLOW_ANY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
}

package lifecycle

import (
	"os"

	"golang.org/x/sys/unix"
)

// pipeBytes is the capacity asked for an output pipe that its target
// fills: 1 MiB, the default /proc/sys/fs/pipe-max-size, so an
// unprivileged broker may ask it too. The target's writes then wait for
// the broker only once 1 MiB is unread, and each read takes up to
// captureRead, instead of both taking turns every 64 KiB. The kernel
// allocates a pipe's pages as they are written, charged to the writer's
// memory cgroup, not to the broker; the capacity counts against the
// broker's uid in pipe-user-pages-soft (16384 pages by default), which
// the kernel never lets a resize pass, and near which the uid's new pipes
// start small. That is why only a stream that fills its pipe is grown.
const pipeBytes = 1 << 20

// growPipe asks the kernel for a pipeBytes pipe behind f. A refusal
// leaves the pipe as it is: only the number of round trips depends on
// it, never what is read.
func growPipe(f *os.File) {
	if rc, err := f.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) { unix.FcntlInt(fd, unix.F_SETPIPE_SZ, pipeBytes) })
	}
}

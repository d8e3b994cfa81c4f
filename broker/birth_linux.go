package broker

import (
	"os"

	"golang.org/x/sys/unix"
)

// birthNs returns the birth time of the file open at f in nanoseconds, or
// 0 when the filesystem does not record one.
func birthNs(f *os.File) (int64, error) {
	var sx unix.Statx_t
	if err := unix.Statx(int(f.Fd()), "", unix.AT_EMPTY_PATH|unix.AT_STATX_SYNC_AS_STAT, unix.STATX_BTIME, &sx); err != nil {
		return 0, err
	}
	if sx.Mask&unix.STATX_BTIME == 0 {
		return 0, nil
	}
	return sx.Btime.Sec*1e9 + int64(sx.Btime.Nsec), nil
}

package fsid

import (
	"errors"

	"golang.org/x/sys/unix"

	"warrant/internal/retry"
	"warrant/wire"
)

func fileIdentity(st *unix.Stat_t, path string) wire.FileIdentity {
	return wire.FileIdentity{
		Path: path, Dev: st.Dev, Ino: st.Ino, Mode: st.Mode, UID: st.Uid, Size: uint64(st.Size),
		MtimeNs: st.Mtim.Nano(), CtimeNs: st.Ctim.Nano(),
	}
}

// ErrNoMountID is StatxMount's answer where statx reports no mount id.
var ErrNoMountID = errors.New("statx reports no mount id (Linux before 5.8, or a sandbox around the process)")

// StatxMount is statx of name from dirfd (with AT_EMPTY_PATH in flags, ""
// for dirfd itself) asking mask and the mount id: the unique one where the
// kernel has it (6.8+), else STATX_MNT_ID. One call asks for both: an
// older kernel ignores STATX_MNT_ID_UNIQUE. Broker and launcher run on
// the same kernel, so they always compare like with like.
func StatxMount(dirfd int, name string, flags, mask int) (unix.Statx_t, error) {
	var sx unix.Statx_t
	err := retry.EINTR(func() error {
		return unix.Statx(dirfd, name, flags, mask|unix.STATX_MNT_ID_UNIQUE|unix.STATX_MNT_ID, &sx)
	})
	if err == nil && sx.Mask&(unix.STATX_MNT_ID_UNIQUE|unix.STATX_MNT_ID) == 0 {
		err = ErrNoMountID
	}
	return sx, err
}

// dirFacts returns the mount id (StatxMount) and the birth time (0 where
// the filesystem records none) of the file open at fd.
func dirFacts(fd int, _ *unix.Stat_t) (mnt uint64, birthNs int64, err error) {
	sx, err := StatxMount(fd, "", unix.AT_EMPTY_PATH|unix.AT_STATX_DONT_SYNC, unix.STATX_BTIME)
	if err != nil {
		return 0, 0, err
	}
	if sx.Mask&unix.STATX_BTIME != 0 {
		birthNs = sx.Btime.Sec*1e9 + int64(sx.Btime.Nsec)
	}
	return sx.Mnt_id, birthNs, nil
}

package fsid

import (
	"golang.org/x/sys/unix"

	"warrant/wire"
)

func fileIdentity(st *unix.Stat_t, path string) wire.FileIdentity {
	return wire.FileIdentity{
		Path: path, Dev: st.Dev, Ino: st.Ino, Mode: st.Mode, UID: st.Uid, Size: uint64(st.Size),
		MtimeNs: st.Mtim.Nano(), CtimeNs: st.Ctim.Nano(),
	}
}

// dirFacts returns the unique mount id (STATX_MNT_ID_UNIQUE where the
// kernel has it, else STATX_MNT_ID) and the birth time (0 where the
// filesystem records none) of the file open at fd.
func dirFacts(fd int, _ *unix.Stat_t) (mnt uint64, birthNs int64, err error) {
	// One call asks for both mount ids: a kernel that knows
	// STATX_MNT_ID_UNIQUE (6.8+) answers with it, an older one ignores the
	// bit and answers STATX_MNT_ID. Broker and launcher run on the same
	// kernel, so they always compare like with like.
	var sx unix.Statx_t
	err = unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_STATX_DONT_SYNC,
		unix.STATX_MNT_ID_UNIQUE|unix.STATX_MNT_ID|unix.STATX_BTIME, &sx)
	if err == nil && sx.Mask&(unix.STATX_MNT_ID_UNIQUE|unix.STATX_MNT_ID) == 0 {
		err = unix.ENOSYS
	}
	if err != nil {
		return 0, 0, err
	}
	if sx.Mask&unix.STATX_BTIME != 0 {
		birthNs = sx.Btime.Sec*1e9 + int64(sx.Btime.Nsec)
	}
	return sx.Mnt_id, birthNs, nil
}

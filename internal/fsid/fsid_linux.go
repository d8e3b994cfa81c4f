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

// mountID returns the unique mount id (STATX_MNT_ID_UNIQUE where the
// kernel has it, else STATX_MNT_ID) of the file open at fd.
func mountID(fd int) (uint64, error) {
	var sx unix.Statx_t
	err := unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_STATX_DONT_SYNC, unix.STATX_MNT_ID_UNIQUE, &sx)
	if err == nil && sx.Mask&unix.STATX_MNT_ID_UNIQUE != 0 {
		return sx.Mnt_id, nil
	}
	err = unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_STATX_DONT_SYNC, unix.STATX_MNT_ID, &sx)
	if err != nil {
		return 0, err
	}
	if sx.Mask&unix.STATX_MNT_ID == 0 {
		return 0, unix.ENOSYS
	}
	return sx.Mnt_id, nil
}

package goals

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"syscall"

	"warrant/broker/internal/identity"
	"warrant/receipt"
)

// Bounds of a read-back. A file criterion's content (contains, JSON
// pointer) is held in memory up to MaxFileBytes; an artefact or a
// digest-only check is streamed through SHA-256 up to MaxArtefactBytes.
// Past its bound a file is unchecked: nothing is claimed about it.
const (
	MaxFileBytes     = 16 << 20
	MaxArtefactBytes = 256 << 20
)

// ReadBeneath reads rel back beneath the workspace ws by descriptor: it
// must be a regular file reached without any symlink and without leaving
// the workspace. Missing (ENOENT, or a component that is not a directory)
// is FileMissing; anything else that stops the read is FileUnchecked with
// the reason. With content the bytes are returned too.
func ReadBeneath(ws *os.File, rel string, content bool) (receipt.ReadBack, []byte) {
	rb := receipt.ReadBack{Path: rel}
	f, err := identity.OpenFileBeneath(ws, rel)
	switch {
	case errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ENOTDIR):
		rb.State = receipt.FileMissing
		return rb, nil
	case errors.Is(err, syscall.ELOOP):
		return unchecked(rb, "a symlink is on its way; files are read back without following symlinks"), nil
	case errors.Is(err, syscall.EXDEV):
		return unchecked(rb, "it is not beneath the workspace"), nil
	case err != nil:
		return unchecked(rb, err.Error()), nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return unchecked(rb, err.Error()), nil
	}
	if !fi.Mode().IsRegular() {
		return unchecked(rb, fmt.Sprintf("not a regular file (%s)", fi.Mode().Type())), nil
	}
	limit := int64(MaxArtefactBytes)
	if content {
		limit = MaxFileBytes
	}
	if fi.Size() > limit {
		return unchecked(rb, fmt.Sprintf("%d bytes, over the read-back bound of %d", fi.Size(), limit)), nil
	}
	h := sha256.New()
	var w io.Writer = h
	var buf *keepingHash
	if content {
		buf = &keepingHash{h: h}
		w = buf
	}
	n, err := io.Copy(w, io.LimitReader(f, limit+1))
	if err != nil {
		return unchecked(rb, err.Error()), nil
	}
	if n > limit {
		return unchecked(rb, fmt.Sprintf("it grew past the read-back bound of %d bytes while read", limit)), nil
	}
	size := uint64(n)
	rb.State, rb.Size, rb.SHA256 = receipt.FilePresent, &size, hex.EncodeToString(h.Sum(nil))
	if buf != nil {
		return rb, buf.b
	}
	return rb, nil
}

func unchecked(rb receipt.ReadBack, why string) receipt.ReadBack {
	rb.State, rb.Why = receipt.FileUnchecked, clip(why)
	return rb
}

// keepingHash hashes what is written and keeps it (the reader before it
// bounds how much).
type keepingHash struct {
	h hash.Hash
	b []byte
}

func (l *keepingHash) Write(p []byte) (int, error) {
	l.b = append(l.b, p...)
	return l.h.Write(p)
}

// WorkspaceReader returns the oracle's Reader for the workspace at the
// absolute path p, opened once without following symlinks, and a
// function to close it. A workspace that cannot be opened makes every
// read-back unchecked with the reason.
func WorkspaceReader(p string) (Reader, func()) {
	ws, err := identity.OpenWorkspace(p)
	if err != nil {
		why := fmt.Sprintf("the goal's workspace %s cannot be opened without following symlinks: %v", p, err)
		return func(rel string, _ bool) (receipt.ReadBack, []byte) {
			return unchecked(receipt.ReadBack{Path: rel}, why), nil
		}, func() {}
	}
	return func(rel string, content bool) (receipt.ReadBack, []byte) { return ReadBeneath(ws, rel, content) }, func() { ws.Close() }
}

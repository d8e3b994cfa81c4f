// Package fsid measures the identity of open files and directories by
// descriptor, never by path: fstat facts, the mount id, and a bounded
// SHA-256 of content. The broker uses it at admission and the launcher uses
// it again at the point of execution; both compare with Same*, so the two
// sides cannot disagree about what "the same file" means. StatxMount is
// the one statx that asks for the mount id (Linux), for Dir and for the
// broker's walk up from a workspace (broker/internal/identity).
package fsid

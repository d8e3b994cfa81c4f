// Package snapshot makes and checks sealed memfd snapshots of executables
// (Linux). A snapshot is a memfd whose content can no longer change
// (F_SEAL_WRITE|F_SEAL_GROW|F_SEAL_SHRINK|F_SEAL_SEAL); executing it with
// execveat(AT_EMPTY_PATH) runs exactly the bytes that were hashed, whatever
// happens to the file on disk afterwards (the lesson of CVE-2019-5736).
//
// The broker may keep snapshots in a cache and pass them to the launcher;
// the launcher never trusts one it did not make without Verify, which
// checks the seals and the size and hashes the sealed bytes again.
package snapshot

// Package darwin is the macOS launcher: the same one-shot contract as
// launcher/linux (docs/architecture.md §5), enforced with Seatbelt. It reads one
// wire.SpawnRequest, re-verifies it, confines itself and executes the
// approved file, or replies Refused and exits without exec.
//
// # Status: unverified
//
// None of this has run on a Mac. It is built by construction: the profile
// generator, the cwd filter, request admission and the request reader are
// platform-neutral and tested on Linux (golden profiles, a fuzz target
// that reads every profile back, a real SOCK_STREAM socketpair with
// SCM_RIGHTS); the rest is cross-compiled and vetted with GOOS=darwin. The
// host capability therefore stays "unverified" until `broker probe`
// passes on a real Mac, performing the real allowed and forbidden effects.
//
// # Steps, in order
//
//  1. Read one frame from fd 3 (AF_UNIX SOCK_STREAM, wire's 4-byte length
//     framing; macOS has no SOCK_SEQPACKET for AF_UNIX) and its descriptors
//     from exactly one SCM_RIGHTS message: workspace, stdout, stderr.
//     Snapshots are refused (macOS cannot execute from a descriptor), as
//     are extra or truncated descriptors, other control messages and bytes
//     queued behind the request.
//  2. Admit: environment exactly as internal/envpolicy.Check allows; cwd
//     textually relative with no "..", "." or empty component, on the
//     workspace's device; the Seatbelt profile generated, or PATH_INVALID
//     for a path SBPL cannot hold safely.
//  3. Verify the workspace descriptor's (dev, ino, birth time) against the approved
//     identity, and that its path still leads to it with no symlink on the
//     way (Seatbelt rules name paths). Open the cwd with
//     openat(workspace, cwd, O_DIRECTORY|O_NOFOLLOW_ANY|O_CLOEXEC), compare
//     (dev, ino, birth time), fchdir.
//  4. Open the executable (and a script's pinned interpreter) by path with
//     O_NOFOLLOW_ANY; the fstat identity must equal the approved one.
//  5. stdin /dev/null, stdout/stderr the broker's pipes, setsid, explicit
//     rlimits (CPU, FSIZE, NOFILE from internal/profile, CORE 0), every
//     descriptor above 2 close-on-exec (listed from /dev/fd).
//  6. Apply the profile with sandbox_init. On failure: SANDBOX_UNAVAILABLE,
//     never an unconfined run.
//  7. Hash the pinned files by descriptor and compare with the approved
//     digests; refuse a file handed to execve that starts with "#!" (its
//     interpreter would be unpinned); send Ready (binding "unbound").
//  8. Read the broker's Proceed, sent once it has checked Ready and the
//     action's EXECUTING record is durable, and execve by path.
//
// Any failure replies Refused with a stable code and exits 125; anything
// but Proceed after Ready, or a failing execve, replies ExecFailed and
// exits 127. fd 3 is close-on-exec, so EOF after Proceed means the exec
// happened.
//
// A "#!" script is executed as the kernel would, but with the pinned
// interpreter: argv is interpreter [arg] script argv[1:]...
//
// # Applying the profile: sandbox_init, not sandbox-exec
//
// The launcher calls sandbox_init(3) on itself, without cgo, by the
// technique golang.org/x/sys/unix uses for libSystem: the symbol is
// imported with //go:cgo_import_dynamic, a one-jump assembly trampoline
// reaches it, and the runtime's syscall.syscall (which the runtime
// exports for this use) makes the call on the system stack. The
// alternative, exec'ing /usr/bin/sandbox-exec pinned by path and digest,
// was rejected:
//
//   - Ready must mean "confined". With sandbox_init the profile is in
//     force before Ready is sent, and a rejected profile becomes a Refused
//     SANDBOX_UNAVAILABLE. With sandbox-exec, Ready would precede the
//     sandbox, and a rejected profile would surface as sandbox-exec exiting
//     non-zero: indistinguishable from the target failing, which
//     docs/architecture.md §4 forbids ("never executed and failed").
//   - sandbox-exec adds an exec: it re-resolves the target by path after
//     the launcher's last measurement, widening the unbound window, and its
//     digest differs per macOS build with no approved source to pin it to.
//   - The profile would travel in argv, visible to every process in ps.
//
// The cost is reliance on a deprecated (but present and widely used)
// libSystem entry point and on a runtime linkname. If either disappears,
// the launcher fails to load or refuses; it never runs a target unconfined.
//
// # The profile
//
// Profile builds a deny-default SBPL profile from the same wire.Policy the
// Linux launcher turns into Landlock rules, plus the action's paths:
//
//   - process-exec of exactly the approved file (for a script, the pinned
//     interpreter): descendants may fork but not exec anything else. This is
//     stricter than Linux, where read_exec paths are executable.
//   - read and map-executable: /System (frameworks, dyld shared cache),
//     /usr/lib (dyld, libSystem), policy.read_exec and the executable's
//     install prefix; read only: /usr/share, the time-zone database, and the
//     script; read and write: the workspace, the action's HOME and TMPDIR,
//     policy.read_write; data only: policy.devices; metadata only: the
//     ancestors of granted paths.
//   - network* denied; no IPC beyond two mach-lookup services
//     (opendirectoryd.libinfo for user lookups, notification_center for
//     notify(3); see baseline.go); a short list of sysctl-read names, none
//     of which lists processes; signals and process-info only to processes
//     of the same sandbox, that is the action and its descendants.
//
// Paths become SBPL string literals with '\' and '"' escaped; control
// characters, invalid UTF-8 and paths over PATH_MAX (1024) are refused, not
// escaped. /etc, /tmp and /var are mapped to /private/…, because Seatbelt
// matches resolved paths.
//
// # What is not enforced
//
//   - Binding. macOS has no fexecve: the file is hashed by descriptor and
//     then executed by path, so a swap in that window runs other bytes. The
//     reply and receipt say "unbound" (UNBOUND_EXECUTABLE). A script's
//     interpreter reads the script by path too, and dyld and dylibs are read
//     from the runtime paths, never bound.
//   - Descendant tracking. Seatbelt cannot deny setsid or setpgid, so a
//     descendant can leave the process group; the darwin broker (process
//     group plus sysctl KERN_PROC enumeration) cannot prove such a process
//     gone, and its receipt must say so. That lifecycle is not built here.
//   - Metadata. The ancestors of granted paths are stat-able. Mount ids do
//     not exist (fsid reports 0), and a cwd is checked by (dev, ino, birth
//     time) only.
//     Rules name paths, not descriptors: the workspace path is checked to
//     lead to the verified directory just before the profile is applied,
//     but HOME and TMPDIR are taken as given, and a rename after the check
//     changes what a rule covers.
//   - No seccomp equivalent: Seatbelt filters operations, not system
//     calls; the kernel surface it leaves is macOS's. No memory or process
//     count limit (RLIMIT_NPROC is per user, not per action). Signal
//     dispositions ignored by the broker stay ignored across execve.
//   - Ready's Landlock fields are zero and it has no seccomp_digest; its
//     seatbelt_digest is the SHA-256 of the applied SBPL profile, and a
//     receipt records it as seatbeltDigest.
//
// # Threat model
//
// Everything from the broker is hostile input: the launcher re-derives and
// re-checks it and trusts no earlier validation. The target is hostile and
// runs as the invoking user inside the Seatbelt sandbox, which its
// descendants inherit and cannot leave.
package darwin

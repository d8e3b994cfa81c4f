// Package actiondirs makes and removes actions' private HOME and TMPDIR
// (<state>/actions/<handle>/{home,tmp}, 0700) off the actions' path: each
// mkdir and rmdir costs tens of microseconds on an ext4 disk, over a
// dozen of them per action, and far more on one without a journal, whose
// inode allocator skips every recently deleted inode.
//
//	actiondirs.go  Dirs: Open, Make, Remove, Refill, Close; what a new
//	               HOME holds (the go command's telemetry off);
//	               ReadUnremoved for `broker status`
//
// One spare set is made ahead, in the background, and renamed to the
// next handle; an ended action's set is renamed away (so its handle
// names nothing from then on) and removed in the background. Both
// background jobs start once the ended action is recorded (Remove's
// caller), so that neither competes with an action's own path for the
// CPU. Nothing ever runs in a spare, and the entries a dead broker left,
// both kinds, are removed by the next one (Open). An unknown action's
// directories are never removed (the broker root does not call Remove
// for one). Removal is by descriptor and gives every directory its
// owner's permissions back first (internal/rmtree): a target that made
// a directory in its HOME mode 0 (a chmod the broker performed for it)
// leaves nothing behind. A removal that fails all the same (an entry
// another user made there) is recorded beside it, named by `broker
// status` (ReadUnremoved) and tried again at every start.
package actiondirs

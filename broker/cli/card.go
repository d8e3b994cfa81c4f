package cli

import (
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"
	"time"
	"unicode"

	"warrant/broker/internal/cardtext"
	"warrant/broker/view"
	"warrant/internal/envpolicy"
	"warrant/wire"
)

// writeCard prints an approval request for a human to decide; a blank
// row ends it.
//
// The short card fits in 20 rows of 80 columns for an ordinary command,
// its blank row included, every row wrapped to the terminal's width (80
// columns when w is no terminal) with a hanging indent under its label
// (a word longer than a row is cut, the row it goes on from ending with
// ↩): the command, what runs (a path beneath the
// workspace or the toolchain said so, 12 digits of the digest, the
// binding in a word), where, the environment but for the PATH and TERM
// every action gets and the cache's variables (counted on the cache
// row), the git identity, the hosts an egress grant may connect to (a
// literal local address marked so) and what the proxy cannot promise,
// then what limits it, a row of a few words
// each (cardtext.Brief: the identity's paths and the host's facts,
// condensed from the limitations text; a weakening keeps its words, a
// line Brief does not know is shown whole), and the commands that
// decide, each one copyable (a long one is continued with " \"). A host
// without the memory or pids controller says so in one line, "memory
// and process count are NOT limited here" and a short why; --debug adds
// the host's own account (its error chain, how to get the limits, why no
// mount namespace). --full is the complete record: every number the
// approval binds (file and directory identities, whole digests, the
// environment's values, the paths, policy digest, fingerprint), each
// argument on its own row and the whole limitations text, as the
// request stores it and --json gives it, a line a row, unwrapped, so
// that each can be copied and searched whole. No byte the request
// brings reaches the terminal as is: the command is shell-quoted
// (view.CommandLine), arguments, values and the cwd always quoted
// (strconv.Quote), and every other name or text of it (a path, the goal,
// a limitations row) goes through view.Plain, which quotes it when a rune of
// it would not print as itself; so a file named with an escape sequence
// can neither rewrite nor hide a row.
func (e *Env) writeCard(w io.Writer, v *wire.ApprovalView) {
	e.writeCardRows(w, v)
	fmt.Fprintln(w)
}

// writeCardRows prints the card without the blank row that ends it (the
// run prompt's question follows it at once).
func (e *Env) writeCardRows(w io.Writer, v *wire.ApprovalView) {
	id := &v.Identity
	r := &rows{w: w, width: termWidth(w)}
	if e.full {
		r.width = 0 // a row a line, as the request holds it: copied and searched whole
	}
	session := ""
	if v.Session != "" {
		session = ", session " + strconv.Quote(v.Session)
	}
	r.wrap("", "   ", fmt.Sprintf("━━ %s ━━ goal %s rev %d%s · %s", v.ID, view.Plain(v.Goal), v.GoalRevision, session,
		time.Unix(v.CreatedUnix, 0).UTC().Format("2006-01-02 15:04Z")), true)
	r.line("command", view.CommandLine(id.Executable.Requested, id.Argv))
	if e.full {
		r.line("executable", fileLine(&id.Executable.File, id.Executable.Chain))
		r.line("binding", bindingLine(id.Binding))
	} else {
		r.line("executable", shortFileLine(id, &id.Executable.File)+", "+bindingWord(id.Binding))
	}
	if in := id.Executable.Interpreter; in != nil {
		arg := ""
		if in.Arg != "" {
			arg = ", with argument " + strconv.Quote(in.Arg)
		}
		if e.full {
			r.line("interpreter", fileLine(&in.File, in.Chain)+", pinned from the #! line"+arg)
		} else {
			r.line("interpreter", shortFileLine(id, &in.File)+arg)
		}
	}
	if tc := id.Toolchain; tc != nil {
		shown := &wire.Toolchain{Kind: tc.Kind, Name: view.Plain(tc.Name), Root: view.Plain(tc.Root)}
		if e.full { // on the short card its variables are on the environment row
			shown.Vars = view.PlainAll(tc.Vars)
		}
		r.line("toolchain", ToolchainLine(shown)) // options.go
	}
	r.line("where", fmt.Sprintf("profile %s, cwd %s in %s", id.Profile, strconv.Quote(id.Cwd.Path), view.Plain(id.Workspace.Path)))
	if !e.full {
		lines, cache := cardtext.Brief(id, v.Limitations, e.Debug)
		r.line("environment", envLine(id, cache))
		e.writeGitIdentity(r, id)
		if len(id.Egress) > 0 {
			r.line("network", "May connect to: "+cardtext.EgressList(id.Egress))
			r.line("", cardtext.EgressLimit)
		}
		for _, l := range lines {
			r.line(l.Label, view.Plain(l.Text)) // a row names the identity's paths
		}
	} else {
		e.writeFullIdentity(r, v)
		e.writeGitIdentity(r, id)
		head := "limitations"
		for line := range strings.SplitSeq(strings.TrimRight(v.Limitations, "\n"), "\n") {
			r.line(head, view.Plain(line))
			head = ""
		}
	}
	st := StateFlag(e.State)
	uses := " [--uses" + nbsp + "N]"
	if e.full {
		uses += " [--ttl" + nbsp + "D] [--binding" + nbsp + "B] [--egress" + nbsp + "HOST:PORT,…|none]"
	}
	r.command("broker approve "+v.ID+st+uses, "")
	r.command("broker deny "+v.ID+st+" [--reason"+nbsp+"R]", "")
	if !e.full {
		r.command("broker approvals --full"+st, "# every limitation and number")
	}
}

// writeGitIdentity prints the git identity the action's private HOME
// gives it, if any.
func (e *Env) writeGitIdentity(r *rows, id *wire.CommandIdentity) {
	g := id.GitIdentity
	if g == nil {
		return
	}
	from := ""
	if e.full {
		from = " (the private HOME's .gitconfig: user.name and user.email only)"
	}
	r.line("git identity", fmt.Sprintf("%s <%s>%s", view.Plain(g.Name), view.Plain(g.Email), from))
}

// envLine is the short card's environment: every value but PATH's and
// TERM's when they are the ones every action gets (envpolicy: the
// sanitized PATH, TERM=dumb), and but for the variables that point into
// the workspace's cache (the cache row counts them).
func envLine(id *wire.CommandIdentity, cache string) string {
	var set []string
	for _, kv := range id.Env {
		if cache != "" && strings.HasPrefix(kv.Value, cache+"/") || kv.Name == "PATH" && kv.Value == envpolicy.SanitizedPath ||
			kv.Name == "TERM" && kv.Value == "dumb" {
			continue
		}
		set = append(set, view.Plain(kv.Name)+"="+strconv.Quote(kv.Value))
	}
	if len(set) == 0 {
		return "only the PATH and TERM every action gets"
	}
	return strings.Join(set, " ")
}

// writeFullIdentity prints the numbers the approval binds beyond what the
// short card shows.
func (e *Env) writeFullIdentity(r *rows, v *wire.ApprovalView) {
	id := &v.Identity
	r.line("argv", fmt.Sprintf("%d argument(s) after argv[0], each literal (no shell):", len(id.Argv)))
	for i, a := range id.Argv {
		r.line("", fmt.Sprintf("[%d] %s", i+1, strconv.Quote(a)))
	}
	writeFileNumbers(r, "executable", &id.Executable.File)
	if in := id.Executable.Interpreter; in != nil {
		writeFileNumbers(r, "interpreter", &in.File)
	}
	r.line("cwd", fmt.Sprintf("%s  (dev %d, ino %d, mount %d)", strconv.Quote(id.Cwd.Path), id.Cwd.Dev, id.Cwd.Ino, id.Cwd.MntID))
	r.line("workspace", fmt.Sprintf("%s  (dev %d, ino %d, mount %d)", view.Plain(id.Workspace.Path), id.Workspace.Dev, id.Workspace.Ino, id.Workspace.MntID))
	r.line("environment", "a private HOME and TMPDIR, and:")
	for _, kv := range id.Env {
		r.line("", view.Plain(kv.Name)+"="+strconv.Quote(kv.Value))
	}
	r.line("read+exec", strings.Join(view.PlainAll(id.Policy.ReadExec), " "))
	if pol := &id.Policy; len(pol.ReadEntries)+len(pol.Excluded) > 0 {
		r.line("/etc entries", strings.Join(view.PlainAll(pol.ReadEntries), " "))
		r.line("withheld", strings.Join(view.PlainAll(pol.Excluded), " "))
	}
	rw := append([]string{view.Plain(id.Workspace.Path), "(private HOME and TMPDIR)"}, view.PlainAll(id.Policy.ReadWrite)...)
	r.line("read+write", strings.Join(rw, " "))
	if c := cacheDir(id); c != "" {
		r.line("cache", view.Plain(c)+"  (kept after the action, shared by every action of this workspace)")
	}
	r.line("devices", strings.Join(view.PlainAll(id.Policy.Devices), " "))
	if len(id.Egress) == 0 {
		r.line("network", "none")
	} else {
		r.line("network", "May connect to:")
		for _, entry := range id.Egress {
			r.line("", cardtext.EgressEntry(entry))
		}
		r.line("", cardtext.EgressLimit)
	}
	r.line("policy", fmt.Sprintf("sha256 %s, Landlock ABI >= %d", hex.EncodeToString(id.PolicyDigest), id.Policy.MinLandlockABI))
	r.line("fingerprint", hex.EncodeToString(v.Fingerprint))
	r.line("binding", "approve --binding sealed-snapshot|in-place pins the other binding; <state>/bindings lists executables sealed by default")
}

// fileLine is a program file in one line: its canonical path, the links
// that lead to it and its digest.
func fileLine(f *wire.FileIdentity, chain []string) string {
	via := ""
	if len(chain) > 0 {
		via = " (via " + strings.Join(view.PlainAll(chain), " → ") + ")"
	}
	return fmt.Sprintf("%s%s sha256 %s", view.Plain(f.Path), via, hex.EncodeToString(f.SHA256))
}

// shortFileLine is a program file for the short card: its canonical path,
// beneath the workspace or the toolchain said so, and the first 12 digits
// of its digest.
func shortFileLine(id *wire.CommandIdentity, f *wire.FileIdentity) string {
	path := view.Plain(f.Path)
	if rest, ok := strings.CutPrefix(f.Path, id.Workspace.Path+"/"); ok {
		path = "the workspace's " + view.Plain(rest)
	} else if tc := id.Toolchain; tc != nil {
		if rest, ok := strings.CutPrefix(f.Path, tc.Root+"/"); ok {
			path = "the toolchain's " + view.Plain(rest)
		}
	}
	return fmt.Sprintf("%s sha256 %s…", path, hex.EncodeToString(f.SHA256)[:12])
}

// writeFileNumbers prints the fstat identity the approval binds of a
// program file.
func writeFileNumbers(r *rows, what string, f *wire.FileIdentity) {
	r.line(what, fmt.Sprintf("%s uid %d, %d bytes, dev %d ino %d, mtime %s, ctime %s", fs.FileMode(f.Mode&0o777), f.UID, f.Size, f.Dev, f.Ino,
		time.Unix(0, f.MtimeNs).UTC().Format(time.RFC3339Nano), time.Unix(0, f.CtimeNs).UTC().Format(time.RFC3339Nano)))
}

// bindingWord is a binding in a word or two, for the short card.
func bindingWord(b wire.Binding) string {
	switch b {
	case wire.InPlace:
		return "in place"
	case wire.SealedSnapshot:
		return "a sealed copy"
	}
	return b.String()
}

// bindingLine says what a binding means for the approved bytes.
func bindingLine(b wire.Binding) string {
	switch b {
	case wire.InPlace:
		return "in-place: the installed file itself runs (its own path is real); no one can write it from its hash to the exec (a read lease, " +
			"or this uid cannot) nor while it runs, and it is measured again after; a script's own bytes are read by path"
	case wire.SealedSnapshot:
		return "sealed-snapshot: a sealed copy with exactly this digest runs; it sees /memfd:… as its own path, so running itself again by that path fails"
	}
	return b.String()
}

// cacheDir is the read-write path GOCACHE points into, the workspace's
// cache (broker/internal/caches), or "".
func cacheDir(id *wire.CommandIdentity) string {
	for _, kv := range id.Env {
		if kv.Name != "GOCACHE" {
			continue
		}
		for _, rw := range id.Policy.ReadWrite {
			if strings.HasPrefix(kv.Value, rw+"/") {
				return rw
			}
		}
	}
	return ""
}

// Card layout.
const (
	labelWidth = 12 // "git identity"
	margin     = "  "
	overflow   = "    "   // where a word too long for the indent starts
	nbsp       = "\u00a0" // a space no row is broken at
	cutMark    = "↩"      // ends a row a word too long for it was cut at
	minWidth   = 40       // narrower terminals wrap what the card prints
	pipeWidth  = 80       // when the card goes to no terminal
)

// rows prints a card's rows at a width, in columns (cols); 0 leaves each
// row whole.
type rows struct {
	w     io.Writer
	width int
}

// line prints text under label.
func (r *rows) line(label, text string) {
	indent := strings.Repeat(" ", 2+labelWidth+1)
	r.wrap(fmt.Sprintf("  %-*s ", labelWidth, label), indent, text, true)
}

// command prints a command to copy from the card's margin: a long one is
// continued on the next row with " \" (a shell joins the rows again), and
// no word is cut, nor an option's hint ("[--uses N]", written with nbsp).
// comment, a shell comment, follows when it fits.
func (r *rows) command(cmd, comment string) {
	rs := breakRows(margin, margin+"    ", cmd, r.width-len(" \\"), false)
	for i, row := range rs {
		row = strings.ReplaceAll(row, nbsp, " ")
		if i < len(rs)-1 {
			row += " \\"
		} else if comment != "" && cols(row)+3+cols(comment) <= r.width {
			row += "   " + comment
		}
		fmt.Fprintln(r.w, row)
	}
}

// wrap prints text from first on, the rows after the first from indent,
// broken at spaces; cut says a word longer than a row is cut.
func (r *rows) wrap(first, indent, text string, cut bool) {
	for _, row := range breakRows(first, indent, text, r.width, cut) {
		fmt.Fprintln(r.w, row)
	}
}

// breakRows breaks text at spaces into rows of at most width columns,
// the first starting with first, the others with indent. When cut, a
// word too long for the indent (a path) has a row of its own from
// overflow and one longer than that is cut, each row it goes on from
// ending with cutMark (so that a cut word never reads as two, nor two
// words as one cut); else it overflows its row.
func breakRows(first, indent, text string, width int, cut bool) []string {
	if width <= 0 {
		return []string{first + text}
	}
	var out []string
	row, fresh := first, true
	for _, word := range strings.Split(text, " ") {
		if !fresh {
			if cols(row)+1+cols(word) <= width {
				row += " " + word
				continue
			}
			out = append(out, row)
			row = indent
		}
		if cut && cols(row)+cols(word) > width && cols(overflow)+cols(word) <= width {
			if row != indent {
				out = append(out, strings.TrimRight(row, " ")) // the label, alone
			}
			row = overflow
		}
		for cut && cols(row)+cols(word) > width { // longer than a row: cut
			head, rest := cutCols(word, width-cols(row)-cols(cutMark))
			out = append(out, row+head+cutMark)
			row, word = indent, rest
		}
		row, fresh = row+word, false
	}
	return append(out, row)
}

// cutCols cuts s after as many runes as fit in n columns, at least one.
func cutCols(s string, n int) (head, rest string) {
	used := 0
	for i, r := range s {
		if used += runeCols(r); used > n && i > 0 {
			return s[:i], s[i:]
		}
	}
	return s, ""
}

// cols is how many columns s takes on a terminal: a wide rune two, any
// other one (the card quotes what does not print).
func cols(s string) int {
	n := 0
	for _, r := range s {
		n += runeCols(r)
	}
	return n
}

// runeCols is how many columns r takes: two when it is wide, else one.
func runeCols(r rune) int {
	if unicode.Is(wide, r) {
		return 2
	}
	return 1
}

// wide are the common East Asian Wide and Fullwidth blocks (Hangul
// Jamo, CJK, kana, Hangul syllables, fullwidth forms) and the emoji
// blocks, which terminals give two columns: a short list, not Unicode's
// whole table (golang.org/x/text is not a dependency); a rune it misses
// makes its row overflow by a column.
var wide = &unicode.RangeTable{
	R16: []unicode.Range16{{0x1100, 0x115f, 1}, {0x2e80, 0x303e, 1}, {0x3041, 0x33ff, 1}, {0x3400, 0x4dbf, 1}, {0x4e00, 0x9fff, 1},
		{0xa000, 0xa4cf, 1}, {0xac00, 0xd7a3, 1}, {0xf900, 0xfaff, 1}, {0xfe30, 0xfe4f, 1}, {0xff00, 0xff60, 1}, {0xffe0, 0xffe6, 1}},
	R32: []unicode.Range32{{0x1f300, 0x1f64f, 1}, {0x1f900, 0x1f9ff, 1}, {0x20000, 0x2fffd, 1}, {0x30000, 0x3fffd, 1}},
}

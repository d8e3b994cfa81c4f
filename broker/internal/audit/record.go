package audit

import (
	"encoding/hex"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"warrant/wire"
)

// The Landlock records (linux/audit.h).
const (
	typeLandlockAccess = 1423 // AUDIT_LANDLOCK_ACCESS
	typeLandlockDomain = 1424 // AUDIT_LANDLOCK_DOMAIN
)

// record is one Landlock audit record, parsed: an access record (type
// 1423) names the domain that refused, what it refused (blockers) and
// the object; a domain record (type 1424) says a domain was allocated by
// process pid, or freed.
type record struct {
	at     time.Time // the kernel's time of the event
	came   time.Time // when the reader took it
	access bool      // an access record; else a domain record
	domain uint64
	// An access record's refusal, made from its first blocker.
	denial wire.Denial
	// A domain record's.
	status string // "allocated" or "deallocated"
	pid    int
}

// maxObject bounds an object kept from a record (wire.DenialObject cuts
// it further): the text is the target's, and records wait to be matched.
const maxObject = 4096

// untrusted are the fields audit writes with audit_log_untrustedstring:
// quoted when every byte is printable ASCII other than '"', else hex.
var untrusted = map[string]bool{"path": true, "name": true, "comm": true, "exe": true, "ocomm": true}

// fields splits a record's text (after its "audit(…): " header) into its
// key=value pairs, unquoting quoted values and decoding the hex of an
// untrusted field. A value in quotes holds no quote (audit writes such a
// string as hex), so the first closing quote ends it.
func fields(text string) (map[string]string, bool) {
	f := map[string]string{}
	for text != "" {
		text = strings.TrimLeft(text, " ")
		eq := strings.IndexByte(text, '=')
		if eq <= 0 || strings.IndexByte(text[:eq], ' ') >= 0 {
			if sp := strings.IndexByte(text, ' '); sp >= 0 {
				text = text[sp:]
				continue
			}
			break
		}
		key, rest := text[:eq], text[eq+1:]
		var val string
		if strings.HasPrefix(rest, `"`) {
			end := strings.IndexByte(rest[1:], '"')
			if end < 0 {
				return nil, false // cut short: the value is not known whole
			}
			val, text = rest[1:1+end], rest[2+end:]
		} else {
			end := strings.IndexByte(rest, ' ')
			if end < 0 {
				end = len(rest)
			}
			val, text = rest[:end], rest[end:]
			if untrusted[key] {
				if b, err := hex.DecodeString(val); err == nil {
					val = string(b)
				}
			}
		}
		if _, twice := f[key]; !twice { // the first is the kernel's: a later one cannot replace it
			f[key] = val
		}
	}
	return f, true
}

// header reads a record's "audit(SECONDS.MILLIS:SERIAL): " and returns
// its time and the text after it.
func header(text string) (time.Time, string, bool) {
	rest, ok := strings.CutPrefix(text, "audit(")
	if !ok {
		return time.Time{}, "", false
	}
	end := strings.Index(rest, "): ")
	if end < 0 {
		return time.Time{}, "", false
	}
	stamp, _, _ := strings.Cut(rest[:end], ":")
	sec, ms, _ := strings.Cut(stamp, ".")
	s, err1 := strconv.ParseInt(sec, 10, 64)
	m, err2 := strconv.ParseInt(ms, 10, 64)
	if err1 != nil || err2 != nil || m < 0 || m > 999 {
		return time.Time{}, "", false
	}
	return time.Unix(s, m*int64(time.Millisecond)), rest[end+3:], true
}

// parse reads one record of type typ, or reports it is not one read here.
func parse(typ uint16, payload []byte) (record, bool) {
	text := strings.TrimRight(string(payload), "\x00\n")
	at, body, ok := header(text)
	if !ok || typ != typeLandlockAccess && typ != typeLandlockDomain {
		return record{}, false
	}
	f, whole := fields(body)
	domain, err := strconv.ParseUint(f["domain"], 16, 64)
	if !whole || err != nil || domain == 0 {
		return record{}, false
	}
	r := record{at: at, domain: domain}
	if typ == typeLandlockDomain {
		r.status = f["status"]
		if r.status == "allocated" {
			if r.pid, err = strconv.Atoi(f["pid"]); err != nil || r.pid <= 0 {
				return record{}, false
			}
		} else if r.status != "deallocated" {
			return record{}, false
		}
		return r, true
	}
	blocker, _, _ := strings.Cut(f["blockers"], ",")
	if blocker == "" {
		return record{}, false
	}
	r.access = true
	r.denial = denialOf(blocker, f)
	return r, true
}

// blockers maps each Landlock right a record may name to the effect it
// refused: closed, so an action's classes stay bounded (an unknown one is
// "landlock", of effect kernel). The rights no action is ever granted
// (devices, sockets, their ioctls and connects, the scopes but signals)
// are of effect kernel: no grant would allow them.
var blockers = map[string]wire.DenialEffect{
	"fs.execute": wire.EffectExec, "fs.write_file": wire.EffectWrite, "fs.read_file": wire.EffectRead,
	"fs.read_dir": wire.EffectRead, "fs.remove_dir": wire.EffectWrite, "fs.remove_file": wire.EffectWrite,
	"fs.make_char": wire.EffectKernel, "fs.make_dir": wire.EffectCreate, "fs.make_reg": wire.EffectCreate,
	"fs.make_sock": wire.EffectKernel, "fs.make_fifo": wire.EffectCreate, "fs.make_block": wire.EffectKernel,
	"fs.make_sym": wire.EffectCreate, "fs.refer": wire.EffectWrite, "fs.truncate": wire.EffectWrite,
	"fs.ioctl_dev": wire.EffectKernel, "fs.resolve_unix": wire.EffectKernel,
	"net.bind_tcp": wire.EffectSocket, "net.connect_tcp": wire.EffectConnect,
	"scope.abstract_unix_socket": wire.EffectKernel, "scope.signal": wire.EffectSignal,
}

// denialOf is the refusal of an access record's first blocker. Call
// names the Landlock right (the record names no system call); a write or
// create is outside the writable scope, anything else outside what
// Landlock grants. The object is the kernel's: a path (wire.ProbePath), an
// address and port, or the process signalled.
func denialOf(blocker string, f map[string]string) wire.Denial {
	effect, known := blockers[blocker]
	if !known {
		effect, blocker = wire.EffectKernel, "landlock"
	}
	d := wire.Denial{Effect: effect, Call: blocker, Rule: wire.RuleLandlock, Source: wire.SourceKernelAudit}
	if strings.HasPrefix(blocker, "fs.") && (effect == wire.EffectWrite || effect == wire.EffectCreate) {
		d.Rule = wire.RuleOutsideScope
	}
	switch {
	case f["path"] != "":
		d.Object = wire.ProbePath(f["path"])
	case f["daddr"] != "":
		d.Object = hostPort(f["daddr"], f["dest"])
	case f["saddr"] != "":
		d.Object = hostPort(f["saddr"], f["src"])
	case f["opid"] != "":
		d.Object = "pid " + f["opid"]
	}
	if len(d.Object) > maxObject {
		d.Object = d.Object[:maxObject]
	}
	return d
}

// hostPort is an address and port as the kernel wrote them, checked.
func hostPort(addr, port string) string {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return ""
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return a.String()
	}
	return netip.AddrPortFrom(a, uint16(p)).String()
}

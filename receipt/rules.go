package receipt

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
)

// A byteClass is a set of bytes, tested with one table lookup.
type byteClass [256]bool

func classOf(ranges ...string) *byteClass {
	var c byteClass
	for _, r := range ranges {
		if len(r) == 3 && r[1] == '-' {
			for b := int(r[0]); b <= int(r[2]); b++ {
				c[b] = true
			}
			continue
		}
		for i := 0; i < len(r); i++ {
			c[r[i]] = true
		}
	}
	return &c
}

func (c *byteClass) String() string {
	var sb strings.Builder
	for b := 0; b < 256; b++ {
		if c[b] {
			fmt.Fprintf(&sb, "%02x", b)
		}
	}
	return sb.String()
}

var (
	classWord     = classOf("A-Z", "a-z", "0-9", "_")
	classAlnum    = classOf("A-Z", "a-z", "0-9")
	classUpperNum = classOf("A-Z", "0-9")
	classB64URL   = classOf("A-Z", "a-z", "0-9", "_-")
	classJWT      = classOf("A-Z", "a-z", "0-9", "-_.")
	classSlack    = classOf("A-Z", "a-z", "0-9", "-")
	classToken68  = classOf("A-Z", "a-z", "0-9", "-._~+/=")
	classAWSKey   = classOf("A-Z", "a-z", "0-9", "/+")
	classAssign   = classOf(" \t\"':=")
	classBlank    = classOf(" \t")
	classPEMLabel = classOf("A-Z", "0-9", " ")
)

// A tokenRule matches a literal prefix, up to sepMax separator bytes, and a
// run of min..max bytes of class. A run longer than max is redacted too:
// the engine keeps consuming class bytes, max at a time, until the run
// ends (see cont), so no cap ever lets the tail of a token through.
type tokenRule struct {
	name     string
	lits     []string
	boundary bool // the byte before the literal must not be a word byte
	sep      *byteClass
	sepMax   int
	class    *byteClass
	min, max int
}

// builtinTokens are the credential shapes every stream is checked for.
// Their order is their priority when two start at the same byte.
var builtinTokens = []tokenRule{
	{name: "aws-access-key-id", boundary: true, class: classUpperNum, min: 16, max: 16,
		lits: []string{"AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AIPA", "ANPA", "ANVA", "AROA", "APKA"}},
	{name: "aws-secret-access-key", sep: classAssign, sepMax: 8, class: classAWSKey, min: 40, max: 40,
		lits: []string{"aws_secret_access_key", "AWS_SECRET_ACCESS_KEY"}},
	{name: "github-token", boundary: true, class: classAlnum, min: 30, max: 255,
		lits: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"}},
	{name: "github-pat", boundary: true, class: classWord, min: 22, max: 255,
		lits: []string{"github_pat_"}},
	{name: "gitlab-token", boundary: true, class: classB64URL, min: 20, max: 64,
		lits: []string{"glpat-"}},
	{name: "slack-token", boundary: true, class: classSlack, min: 10, max: 255,
		lits: []string{"xoxa-", "xoxb-", "xoxp-", "xoxr-", "xoxs-"}},
	{name: "api-key", boundary: true, class: classB64URL, min: 20, max: 255,
		lits: []string{"sk-"}},
	{name: "jwt", boundary: true, class: classJWT, min: 10, max: 1024,
		lits: []string{"eyJ"}},
	{name: "bearer", sep: classBlank, sepMax: 8, class: classToken68, min: 8, max: 1024,
		lits: []string{"Bearer ", "BEARER "}},
}

// PEM private keys: from the BEGIN line through the END line. A block
// whose END line does not appear within pemWindow bytes is redacted
// pemWindow bytes at a time until it does (see cont).
const (
	pemName    = "pem-private-key"
	pemBegin   = "-----BEGIN"
	pemEnd     = "-----END"
	pemKeyTail = "PRIVATE KEY-----"
	pemLabel   = 40 // longest label between BEGIN/END and PRIVATE KEY
	pemWindow  = 32 << 10
)

// Exact secret values the broker supplies.
const (
	exactName   = "exact-secret"
	MinSecret   = 8    // shorter values would redact ordinary text
	MaxSecret   = 4096 // longest exact value
	maxSecrets  = 64
	rulesetName = "warrant-redact-v1"
)

// rulesetID is the digest of the built-in rules' full description. Exact
// secret values are never hashed into it (a digest of a low-entropy
// secret could be enumerated); only their number is recorded, beside it.
// Every stream's evidence names it, so it is described and hashed once.
var rulesetID = sync.OnceValue(func() string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n", rulesetName)
	fmt.Fprintf(h, "%s begin=%q end=%q tail=%q label=%d class=%s window=%d\n",
		pemName, pemBegin, pemEnd, pemKeyTail, pemLabel, classPEMLabel, pemWindow)
	for _, t := range builtinTokens {
		fmt.Fprintf(h, "%s lits=%q boundary=%t sepmax=%d class=%s min=%d max=%d",
			t.name, t.lits, t.boundary, t.sepMax, t.class, t.min, t.max)
		if t.sep != nil {
			fmt.Fprintf(h, " sep=%s", t.sep)
		}
		fmt.Fprintln(h)
	}
	fmt.Fprintf(h, "%s min=%d max=%d\n", exactName, MinSecret, MaxSecret)
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
})

// matcher compiles t. Every literal of one rule has the same length.
func (t tokenRule) matcher() matcher {
	litLen := len(t.lits[0])
	for _, l := range t.lits {
		if len(l) != litLen {
			panic("receipt: internal error: literals of unequal length in " + t.name)
		}
	}
	return matcher{
		name: t.name, lits: t.lits, boundary: t.boundary,
		width: litLen + t.sepMax + t.max + 1,
		// Too short a run that has ended (a byte outside the class
		// follows it) stays too short.
		cannot: func(w []byte) bool {
			i := litLen
			for j := 0; j < t.sepMax && i < len(w) && t.sep[w[i]]; j++ {
				i++
			}
			run := 0
			for i+run < len(w) && run < t.min && t.class[w[i+run]] {
				run++
			}
			return run < t.min && i+run < len(w)
		},
		match: func(w []byte) (int, cont) {
			i := litLen
			for j := 0; j < t.sepMax && i < len(w) && t.sep[w[i]]; j++ {
				i++
			}
			run := 0
			for i+run < len(w) && run <= t.max && t.class[w[i+run]] {
				run++
			}
			switch {
			case run < t.min:
				return 0, cont{}
			case run > t.max:
				return i + t.max, cont{class: t.class, max: t.max}
			}
			return i + run, cont{}
		},
	}
}

func pemMatcher() matcher {
	return matcher{
		name: pemName, lits: []string{pemBegin}, width: pemWindow,
		// The header line is decided by its first bytes: no private
		// key header there, no match.
		cannot: func(w []byte) bool {
			return len(w) >= len(pemBegin)+pemLabel+len(pemKeyTail) && pemLine(w, len(pemBegin)) < 0
		},
		match: func(w []byte) (int, cont) {
			hdr := pemLine(w, len(pemBegin))
			if hdr < 0 {
				return 0, cont{}
			}
			return pemBody(w, hdr, len(w) == pemWindow)
		},
	}
}

// pemLine returns the end of "<label>PRIVATE KEY-----" starting at w[i:],
// where label is at most pemLabel bytes of [A-Z0-9 ]; -1 if it is not there.
func pemLine(w []byte, i int) int {
	rest := w[i:min(len(w), i+pemLabel+len(pemKeyTail))]
	k := bytes.Index(rest, []byte(pemKeyTail))
	if k < 0 {
		return -1
	}
	for _, b := range rest[:k] {
		if !classPEMLabel[b] {
			return -1
		}
	}
	return i + k + len(pemKeyTail)
}

// pemBody consumes a PEM body from w[i:] through its END line. Without an
// END line in w, it consumes w (keeping back a possibly split "-----END"
// when more may follow) and stays in the PEM state.
func pemBody(w []byte, i int, full bool) (int, cont) {
	k := bytes.Index(w[i:], []byte(pemEnd))
	if k < 0 {
		if !full {
			return len(w), cont{}
		}
		return max(i, len(w)-(len(pemEnd)-1)), cont{pem: true}
	}
	end := i + k + len(pemEnd)
	if tail := pemLine(w, end); tail >= 0 {
		end = tail
	}
	return end, cont{}
}

// exactMatcher matches one secret value byte for byte.
func exactMatcher(v string) matcher {
	return matcher{
		name: exactName, lits: []string{v}, width: len(v),
		match: func([]byte) (int, cont) { return len(v), cont{} },
	}
}

package receipt

import (
	"encoding/binary"
	"math"
	"math/bits"
	"slices"
	"strings"
)

// The literal prefilter. Every rule starts with a literal of at least
// three bytes. For each literal the ruleset picks two adjacent byte pairs
// (at offsets j and j+1) that are rare in ordinary text, and marks them in
// a table indexed by the pair's 16 bits. The engine then looks at every
// second position only: any occurrence of the literal puts one of its two
// pairs on a sampled position, whatever the parity. Text whose sampled
// pairs are all unmarked (the common case) costs one table load per two
// bytes, sixteen bytes per step, however many literals and exact secrets
// the ruleset holds; a hit is confirmed by comparing the literals behind
// that pair, unless the bytes just before and after it already rule
// every one of them out (ERROR holds RO, but AROA needs an A around it).

// commonBytes lists bytes from most to least frequent in ordinary text,
// logs and source code (a rough, general estimate, not fitted to any
// benchmark). A byte that is not listed counts as rarer than all of them.
const commonBytes = " etaoinsrhldcu\nmfpgwyb.,0-1_2:/=vk3\"'x45(6)98j7qz" +
	"TSAEIONRCLDMPHBFUGWYV[]{}KJXQZ;<>|#@!?*&%$+~^`\\\t"

// commonPairs lists the most frequent letter pairs of English text, most
// frequent first (a general estimate, like commonBytes). Two common
// letters can still make a rare pair ("oa"), and two letters that are
// each less common can make a frequent one ("ea"), which byte ranks alone
// would misjudge.
var commonPairs = strings.Fields("th he in er an re on at en nd ti es or te of ed is it " +
	"al ar st to nt ng se ha as ou io le ve co me de hi ri ro ic ne ea ra ce li ch ll be ma si om ur")

var byteRank = func() (r [256]int) {
	for i := range r {
		r[i] = len(commonBytes)
	}
	for i := len(commonBytes) - 1; i >= 0; i-- {
		r[commonBytes[i]] = i
	}
	return r
}()

// pairRarity estimates how rare the pair a, b is in ordinary text; higher
// is rarer. A pair of same-case letters on the common list scores like a
// pair of the most common letters, by its place on the list; any other
// pair by the ranks of its bytes.
func pairRarity(a, b byte) int {
	fold := strings.ToLower(string([]byte{a, b}))
	if (isLower(a) && isLower(b)) || (isUpper(a) && isUpper(b)) {
		if i := slices.Index(commonPairs, fold); i >= 0 {
			return i / 4
		}
	}
	return byteRank[a] + byteRank[b]
}

func isLower(b byte) bool { return 'a' <= b && b <= 'z' }
func isUpper(b byte) bool { return 'A' <= b && b <= 'Z' }

// pairLookahead bounds the offset of a literal's chosen pairs, so that a
// hit never makes the engine look far ahead for an earlier literal.
const pairLookahead = 32

// pairRef is a literal that holds the pair of a table entry at offset off.
// head and mask are its first (up to) eight bytes as a little-endian load
// reads them, so that most confirmations are one load and one compare.
// boundary says that its rule matches only where the byte before the
// literal is not a word byte.
type pairRef struct {
	lit        string
	off        int
	boundary   bool
	head, mask uint64
}

// at reports whether the literal is at buf[s:], which holds at least
// len(lit) bytes.
func (r *pairRef) at(buf []byte, s int) bool {
	if s+8 <= len(buf) {
		if binary.LittleEndian.Uint64(buf[s:])&r.mask != r.head {
			return false
		}
		return len(r.lit) <= 8 || string(buf[s+8:s+len(r.lit)]) == r.lit[8:]
	}
	return string(buf[s:s+len(r.lit)]) == r.lit
}

// prefilter is the pair table and, per marked pair, the literals behind
// it. A byte per pair, not a bit, so the scan needs no shifts; the entries
// of ordinary text fall in a few KiB of the table.
type prefilter struct {
	slot   [1 << 16]uint8 // pair → 1 + its index in refs; 0 if unmarked
	refs   [][]pairRef
	maxOff int // largest offset of a chosen pair in its literal
	// around[k-1] holds, for the pair of table entry k, the bytes that
	// may stand just before it and just after it in some literal behind
	// it (any byte where a literal starts or ends with the pair): a hit
	// with other neighbours is no literal, known without confirming.
	around [][2]byteClass
}

// pairKey is the pair a, b as a little-endian 16-bit load reads it.
func pairKey(a, b byte) uint16 { return uint16(a) | uint16(b)<<8 }

// addLiteral marks the rarest two adjacent pairs of lit, the literal of a
// rule that needs a word boundary before it if boundary is set.
func (f *prefilter) addLiteral(lit string, boundary bool) {
	if len(lit) < 3 {
		panic("receipt: internal error: literal shorter than three bytes: " + lit)
	}
	rarity := func(j int) int { return pairRarity(lit[j], lit[j+1]) }
	best, bestScore := 0, -1
	for j := 0; j+2 < len(lit) && j < pairLookahead; j++ {
		if s := min(rarity(j), rarity(j+1)); s > bestScore {
			best, bestScore = j, s
		}
	}
	for _, off := range []int{best, best + 1} {
		k := pairKey(lit[off], lit[off+1])
		if f.slot[k] == 0 {
			if len(f.refs) == math.MaxUint8 {
				panic("receipt: internal error: too many prefilter pairs")
			}
			f.refs = append(f.refs, nil)
			f.around = append(f.around, [2]byteClass{})
			f.slot[k] = uint8(len(f.refs))
		}
		nb := &f.around[f.slot[k]-1]
		for b := range 256 {
			nb[0][b] = nb[0][b] || off == 0 || lit[off-1] == byte(b)
			nb[1][b] = nb[1][b] || off+2 == len(lit) || lit[off+2] == byte(b)
		}
		ref := pairRef{lit: lit, off: off, boundary: boundary}
		for i := range min(8, len(lit)) {
			ref.head |= uint64(lit[i]) << (8 * i)
			ref.mask |= 0xff << (8 * i)
		}
		f.refs[f.slot[k]-1] = append(f.refs[f.slot[k]-1], ref)
	}
	f.maxOff = max(f.maxOff, best+1)
}

// candidate returns the earliest start p >= c in buf of a literal whose
// rule could match there, or -1: a literal of a rule that needs a word
// boundary is passed over where a word byte of buf precedes it (at p == 0
// the byte before is not in buf, and the engine decides).
//
// It looks at every second position from c, sixteen bytes (eight sampled
// pairs) per step, and confirms each marked pair of a step against the
// literals behind it before it takes the next step. A literal starting at
// s puts a chosen pair on a sampled position at most s+maxOff, so once
// one is found only the pairs up to maxOff past it are looked at, for a
// literal that starts earlier.
func (f *prefilter) candidate(buf []byte, c int) int {
	t := &f.slot
	best := -1
	lim := len(buf) - 1 // a sampled position has its pair in buf
	i := c
	for ; i+15 <= lim; i += 16 {
		w := buf[i : i+16] // one bounds check for the step
		x := binary.LittleEndian.Uint64(w)
		y := binary.LittleEndian.Uint64(w[8:])
		if t[uint16(x)]|t[uint16(x>>16)]|t[uint16(x>>32)]|t[uint16(x>>48)]|
			t[uint16(y)]|t[uint16(y>>16)]|t[uint16(y>>32)]|t[uint16(y>>48)] == 0 {
			continue
		}
		// The marked pairs of the step, one byte each, taken in order.
		h := uint64(t[uint16(x)]) | uint64(t[uint16(x>>16)])<<8 | uint64(t[uint16(x>>32)])<<16 | uint64(t[uint16(x>>48)])<<24 |
			uint64(t[uint16(y)])<<32 | uint64(t[uint16(y>>16)])<<40 | uint64(t[uint16(y>>32)])<<48 | uint64(t[uint16(y>>48)])<<56
		for h != 0 {
			k := bits.TrailingZeros64(h) &^ 7 // the byte of the first marked pair
			if i+k/4 >= lim {
				break
			}
			best, lim = f.confirm(buf, c, i+k/4, uint8(h>>k), best, lim)
			h &^= 0xff << k
		}
	}
	for ; i < lim; i += 2 {
		if slot := t[pairKey(buf[i], buf[i+1])]; slot != 0 {
			best, lim = f.confirm(buf, c, i, slot, best, lim)
		}
	}
	return best
}

// confirm checks the literals behind the marked pair at i (its table
// entry slot) and returns the earliest start found so far and the new
// limit of the positions still to look at. Most hits of ordinary text
// are not a literal, and the pair's neighbours already say so.
func (f *prefilter) confirm(buf []byte, c, i int, slot uint8, best, lim int) (int, int) {
	nb := &f.around[slot-1]
	if (i > 0 && !nb[0][buf[i-1]]) || (i+2 < len(buf) && !nb[1][buf[i+2]]) {
		return best, lim
	}
	refs := f.refs[slot-1]
	for j := range refs {
		ref := &refs[j]
		s := i - ref.off
		if s < c || (best >= 0 && s >= best) || s+len(ref.lit) > len(buf) || !ref.at(buf, s) ||
			(ref.boundary && s > 0 && classWord[buf[s-1]]) {
			continue
		}
		best, lim = s, min(lim, s+f.maxOff+1)
	}
	return best, lim
}

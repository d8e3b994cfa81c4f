package receipt

import "encoding/binary"

// The literal prefilter. Every rule starts with a literal of at least
// three bytes. For each literal the ruleset picks two adjacent byte pairs
// (at offsets j and j+1) that are rare in ordinary text, and sets them in
// a 64 Kbit table. The engine then looks at every second position only:
// any occurrence of the literal puts one of its two pairs on a sampled
// position, whatever the parity. Text whose sampled pairs are all absent
// from the table (the common case) costs one table lookup per two bytes,
// however many literals and exact secrets the ruleset holds; a hit is
// confirmed by comparing the literal itself.

// commonBytes lists bytes from most to least frequent in ordinary text,
// logs and source code (a rough, general estimate, not fitted to any
// benchmark). A byte that is not listed counts as rarer than all of them.
const commonBytes = " etaoinsrhldcu\nmfpgwyb.,0-1_2:/=vk3\"'x45(6)98j7qz" +
	"TSAEIONRCLDMPHBFUGWYV[]{}KJXQZ;<>|#@!?*&%$+~^`\\\t"

var byteRank = func() (r [256]int) {
	for i := range r {
		r[i] = len(commonBytes)
	}
	for i := len(commonBytes) - 1; i >= 0; i-- {
		r[commonBytes[i]] = i
	}
	return r
}()

// pairLookahead bounds the offset of a literal's chosen pairs, so that a
// hit never makes the engine look far ahead for an earlier literal.
const pairLookahead = 32

// pairRef is a literal that holds the pair of a table entry at offset off.
type pairRef struct {
	lit string
	off int
}

// prefilter is the pair table and, per pair, the literals behind it in
// an open-addressed table (cheaper than a map on the hit path).
type prefilter struct {
	bits   [1 << 16 / 64]uint64
	slots  [pairSlots]pairSlot
	used   int // slots in use
	maxOff int // largest offset of a chosen pair in its literal
}

// pairSlots exceeds twice the most pairs a ruleset can set (two per
// literal), so probing always ends at an empty slot.
const pairSlots = 512

type pairSlot struct {
	used bool
	key  uint16
	refs []pairRef
}

// slot returns the slot of k: its own, or the empty one it would take.
func (f *prefilter) slot(k uint16) *pairSlot {
	for h := uint32(k) * 0x9e3779b1 >> 23; ; h = (h + 1) % pairSlots {
		if s := &f.slots[h]; !s.used || s.key == k {
			return s
		}
	}
}

// pairKey is the pair a, b as a little-endian 16-bit load reads it.
func pairKey(a, b byte) uint16 { return uint16(a) | uint16(b)<<8 }

func (f *prefilter) has(k uint16) bool { return f.bits[k>>6]&(1<<(k&63)) != 0 }

// addLiteral sets the rarest two adjacent pairs of lit in the table.
func (f *prefilter) addLiteral(lit string) {
	if len(lit) < 3 {
		panic("receipt: internal error: literal shorter than three bytes: " + lit)
	}
	pairScore := func(j int) int { return byteRank[lit[j]] + byteRank[lit[j+1]] }
	best, bestScore := 0, -1
	for j := 0; j+2 < len(lit) && j < pairLookahead; j++ {
		if s := min(pairScore(j), pairScore(j+1)); s > bestScore {
			best, bestScore = j, s
		}
	}
	for _, off := range []int{best, best + 1} {
		k := pairKey(lit[off], lit[off+1])
		f.bits[k>>6] |= 1 << (k & 63)
		s := f.slot(k)
		if !s.used {
			if f.used++; f.used > pairSlots/2 {
				panic("receipt: internal error: too many prefilter pairs")
			}
		}
		s.used, s.key = true, k
		s.refs = append(s.refs, pairRef{lit: lit, off: off})
	}
	f.maxOff = max(f.maxOff, best+1)
}

// nextHit returns the first position i >= from, stepping by two, whose
// pair buf[i], buf[i+1] is in the table; -1 if there is none. It reads
// eight bytes (four sampled pairs) per load.
func (f *prefilter) nextHit(buf []byte, from int) int {
	if from < 0 || from+1 >= len(buf) {
		return -1
	}
	b := buf[from:]
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		k0, k1, k2, k3 := uint16(x), uint16(x>>16), uint16(x>>32), uint16(x>>48)
		if (f.bits[k0>>6]>>(k0&63)|f.bits[k1>>6]>>(k1&63)|
			f.bits[k2>>6]>>(k2&63)|f.bits[k3>>6]>>(k3&63))&1 != 0 {
			break
		}
	}
	for ; i+1 < len(b); i += 2 {
		if f.has(pairKey(b[i], b[i+1])) {
			return from + i
		}
	}
	return -1
}

// candidate returns the earliest start p >= c of any literal in buf, or -1.
// A literal starting at s puts a chosen pair on a sampled position at most
// s+maxOff, so once one is found, hits up to maxOff past it are checked
// for a literal that starts earlier.
func (f *prefilter) candidate(buf []byte, c int) int {
	best := -1
	for i := f.nextHit(buf, c); i >= 0; i = f.nextHit(buf, i+2) {
		if best >= 0 && i > best+f.maxOff {
			break
		}
		for _, ref := range f.slot(pairKey(buf[i], buf[i+1])).refs {
			s := i - ref.off
			if s >= c && (best < 0 || s < best) && s+len(ref.lit) <= len(buf) &&
				string(buf[s:s+len(ref.lit)]) == ref.lit {
				best = s
			}
		}
	}
	return best
}

package landlockabi

import "testing"

func TestFloor(t *testing.T) {
	for kernel, want := range map[int]uint8{0: TCP, 1: TCP, 4: TCP, 5: TCP, 6: Scopes, 7: Scopes, 12: Scopes} {
		if got := Floor(kernel); got != want {
			t.Errorf("Floor(%d) = %d, want %d", kernel, got, want)
		}
	}
}

package landlockabi

// The ABIs that bring what warrant relies on.
const (
	TCP    = 4 // TCP bind and connect rules: the launcher's own floor
	Scopes = 6 // abstract unix socket and signal scopes
)

// Floor is the MinLandlockABI a policy demands of a kernel whose counted
// ABI (Running) is kernel: Scopes where the kernel has them, else TCP.
func Floor(kernel int) uint8 {
	if kernel >= Scopes {
		return Scopes
	}
	return TCP
}

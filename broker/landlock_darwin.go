package broker

// kernelLandlockABI is 0 on macOS, which has no Landlock; the launcher
// enforces the same policy with Seatbelt there, and the policy's Landlock
// floor is the ABI 4 minimum, which the macOS launcher does not consult.
func kernelLandlockABI() int { return 0 }

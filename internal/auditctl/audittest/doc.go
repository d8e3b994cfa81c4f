// Package audittest turns the kernel's audit on for a test, as an
// operator would (auditctl -e 1), and back off after it.
package audittest

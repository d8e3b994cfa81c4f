package receipt

import (
	"errors"
	"strings"
	"testing"

	"warrant/wire"
)

// A receipt may say that a contract grant admitted its argv; Validate
// holds the parse to exactly that argv and the grant to the lease.
func TestContractUseValidate(t *testing.T) {
	good := func() *Receipt {
		r := testReceipt("r-1", wire.Exited)
		r.Contract = &ContractUse{Grant: r.LeaseID, Name: "python", Digest: strings.Repeat("ab", 32), Args: []ContractArg{
			{Index: 0, Arg: "-c", Slot: "-c", Kind: "flag"},
			{Index: 1, Arg: "print(6*7)", Slot: "-c", Kind: "string"},
		}}
		return r
	}
	if err := good().Validate(); err != nil {
		t.Fatalf("a receipt with its contract's parse: %v", err)
	}
	for name, bad := range map[string]func(*ContractUse){
		"another grant":   func(c *ContractUse) { c.Grant = "lease-2" },
		"no name":         func(c *ContractUse) { c.Name = "" },
		"short digest":    func(c *ContractUse) { c.Digest = "ab" },
		"an argument out": func(c *ContractUse) { c.Args = c.Args[:1] },
		"another arg":     func(c *ContractUse) { c.Args[1].Arg = "print(1)" },
		"out of order":    func(c *ContractUse) { c.Args[0].Index = 1 },
		"no slot":         func(c *ContractUse) { c.Args[0].Slot = "" },
	} {
		r := good()
		bad(r.Contract)
		if err := r.Validate(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Validate = %v, want ErrInvalid", name, err)
		}
	}
}

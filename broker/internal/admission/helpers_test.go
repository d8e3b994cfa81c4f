package admission

import (
	"errors"
	"testing"

	"warrant/wire"
)

func wantCode(t testing.TB, err error, code wire.Code) {
	t.Helper()
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != code {
		t.Fatalf("want %s, got %v", code, err)
	}
	if we.Message == "" {
		t.Fatalf("%s without a sentence", code)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

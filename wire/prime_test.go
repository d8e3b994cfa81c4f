package wire

import (
	"reflect"
	"testing"
)

// Every message type makes Prime's round trip, and its sample sets every
// exported field at every level: a field Prime left zero would be a type
// whose tables the first real message still builds.
func TestPrimeCoversEveryMessageType(t *testing.T) {
	for typ := range messageTypes {
		if err := Prime(typ); err != nil {
			t.Errorf("%v", err)
		}
		m := newMessage(typ)
		fill(reflect.ValueOf(m).Elem(), fillDepth)
		if path := zeroField(reflect.ValueOf(m).Elem(), typ.String()); path != "" {
			t.Errorf("the %s sample leaves %s zero", typ, path)
		}
	}
}

// zeroField names the first exported field under v that is zero, or "".
func zeroField(v reflect.Value, path string) string {
	switch v.Kind() {
	case reflect.Slice, reflect.Pointer:
		if v.IsNil() {
			return path
		}
		if v.Kind() == reflect.Pointer {
			return zeroField(v.Elem(), path)
		}
		return zeroField(v.Index(0), path+"[0]")
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				if p := zeroField(v.Field(i), path+"."+v.Type().Field(i).Name); p != "" {
					return p
				}
			}
		}
		return ""
	}
	if v.IsZero() {
		return path
	}
	return ""
}

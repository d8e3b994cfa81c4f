package egress

import (
	"net/netip"
	"testing"
)

func TestInternal(t *testing.T) {
	for _, s := range []string{
		"127.0.0.1", "127.255.0.9", "0.0.0.0", "0.1.2.3", "10.0.0.1", "172.16.5.4", "192.168.1.1",
		"169.254.169.254", "100.64.0.1", "100.127.255.254", "192.0.0.170", "198.18.0.1", "224.0.0.1",
		"239.255.255.250", "240.0.0.1", "255.255.255.255",
		"::", "::1", "fe80::1", "fe80::1%eth0", "fd00:ec2::254", "fc00::1", "fec0::1", "ff02::1", "ff05::2",
		"::ffff:127.0.0.1", "::ffff:169.254.169.254", "::ffff:10.0.0.1", "::127.0.0.1", "::8.8.8.8",
		"64:ff9b::7f00:1", "64:ff9b::a9fe:a9fe", "64:ff9b::a00:1", "64:ff9b:1::808:808",
		"2002:7f00:1::1", "2002:808:808::1", "2001:0:4136:e378:8000:63bf:3fff:fdd2", "100::1",
	} {
		if !internal(netip.MustParseAddr(s)) {
			t.Errorf("%s is not internal", s)
		}
	}
	for _, s := range []string{
		"8.8.8.8", "1.1.1.1", "104.16.0.1", "100.63.255.255", "100.128.0.0", "172.32.0.1", "192.0.1.1", "198.20.0.1",
		"::ffff:8.8.8.8", "64:ff9b::808:808", "2606:4700::1111", "2001:4860:4860::8888",
	} {
		if internal(netip.MustParseAddr(s)) {
			t.Errorf("%s is internal", s)
		}
	}
	if internal(netip.Addr{}) == false {
		t.Error("the zero address is not internal")
	}
}

func TestLocal(t *testing.T) {
	for entry, want := range map[string]bool{
		"127.0.0.1:4873": true, "[::1]:4873": true, "10.0.0.5:8080": true, "169.254.169.254:80": true,
		"100.64.1.1:443": true, "[fd12::1]:443": true, "0.0.0.0:80": true,
		"8.8.8.8:443": false, "[2606:4700::1111]:443": false, "registry.npmjs.org:443": false,
		"localhost.test:80": false, "not an entry": false,
	} {
		if Local(entry) != want {
			t.Errorf("Local(%q) = %v", entry, !want)
		}
	}
}

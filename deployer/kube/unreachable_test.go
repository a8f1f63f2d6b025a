package kube

import (
	"net"
	"testing"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// TestUnreachable_AMappingOfASilentClusterIsUnreachable: discovery of a
// cluster that refuses connections (a port nobody listens on) fails with
// an error Unreachable recognises, so a deployer starting while its
// cluster is down retries.
func TestUnreachable_AMappingOfASilentClusterIsUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	dc, err := discovery.NewDiscoveryClientForConfig(&rest.Config{Host: "http://" + addr})
	if err != nil {
		t.Fatal(err)
	}
	cached := memory.NewMemCacheClient(dc)
	c := &Cluster{Discovery: cached, Mapper: restmapper.NewDeferredDiscoveryRESTMapper(cached)}
	_, err = c.Mapping("v1", "ConfigMap")
	if err == nil || !Unreachable(err) {
		t.Fatalf("Mapping = %v (%T): want an error Unreachable recognises", err, err)
	}
}

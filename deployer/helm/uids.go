package helm

import (
	"context"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	dkube "cairn.dev/cairn/deployer/kube"
)

// uidGetter reads objects through g and remembers the uid of each it
// read, so that the release's managedResources record them as the
// manifest deployer's do (DESIGN.md "Kubernetes").
type uidGetter struct {
	g    dkube.Getter
	mu   sync.Mutex
	uids map[dkube.ObjectRef]string
}

func newUIDGetter(g dkube.Getter) *uidGetter {
	return &uidGetter{g: g, uids: map[dkube.ObjectRef]string{}}
}

// Get reads ref through the wrapped getter and records its uid. It
// blocks on the cluster; errors are the getter's.
func (u *uidGetter) Get(ctx context.Context, ref dkube.ObjectRef) (*unstructured.Unstructured, error) {
	obj, err := u.g.Get(ctx, ref)
	if err == nil {
		u.mu.Lock()
		u.uids[ref] = string(obj.GetUID())
		u.mu.Unlock()
	}
	return obj, err
}

// fill reads the refs not read yet (readiness checks disabled), so that
// every existing object has its uid. It blocks on the cluster; the
// error is a read's other than NotFound (a missing object has no uid).
func (u *uidGetter) fill(ctx context.Context, refs []dkube.ObjectRef) error {
	for _, r := range refs {
		if u.uid(r) != "" {
			continue
		}
		if _, err := u.Get(ctx, r); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// uid returns the uid read of ref, "" when it was not read.
func (u *uidGetter) uid(ref dkube.ObjectRef) string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.uids[ref]
}

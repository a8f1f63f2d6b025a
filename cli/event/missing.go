package event

import (
	"context"
	"errors"
	"fmt"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
)

// missingTarget explains why creating an event in namespace ns (for
// project, when not "") found nothing to go to: the namespace, or the
// project, does not exist. It returns nil when both exist or cannot be
// read (the caller keeps its own error then). It blocks on up to two
// GETs.
func missingTarget(ctx context.Context, c client.Interface, ns, project string) error {
	if _, err := c.Get(ctx, api.KindNamespace, "", ns); errors.Is(err, api.ErrNotFound) {
		return fmt.Errorf("namespace %q does not exist: apply a Namespace named %s first, or pass -n with one of 'cairn get namespaces'", ns, ns)
	}
	if project == "" {
		return nil
	}
	if _, err := c.Get(ctx, api.KindProject, ns, project); errors.Is(err, api.ErrNotFound) {
		return fmt.Errorf("project %q not found in namespace %q: see 'cairn get projects -n %s', or pass -n with the project's namespace", project, ns, ns)
	}
	return nil
}

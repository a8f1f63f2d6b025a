package kubernetes

import (
	"context"
	"fmt"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Permission is one verb on one resource that the runtime needs in its
// namespace.
type Permission struct {
	Resource string // "pods", "pods/log", ...
	Verbs    []string
}

// Permissions is the Role the runtime needs (docs/kubernetes-runtime.md),
// nothing cluster-wide.
var Permissions = []Permission{
	{Resource: "pods", Verbs: []string{"get", "list", "watch", "create", "delete"}},
	{Resource: "pods/log", Verbs: []string{"get"}},
	{Resource: "secrets", Verbs: []string{"get", "list", "watch", "create", "update", "delete"}},
	{Resource: "persistentvolumeclaims", Verbs: []string{"get", "create", "delete"}},
}

// checkAccess asks the cluster whether the runtime's user holds every
// permission of Permissions in ns (SelfSubjectAccessReview, which every
// authenticated user may ask). Errors: the first permission missing,
// naming it and the Role to grant, wrapping ErrNotReady; or the cluster
// not answering.
func checkAccess(ctx context.Context, cs kubernetes.Interface, ns string) error {
	for _, p := range Permissions {
		res, sub, _ := strings.Cut(p.Resource, "/")
		for _, verb := range p.Verbs {
			rev := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
				ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Resource: res, Subresource: sub}}}
			out, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, rev, metav1.CreateOptions{})
			if err != nil {
				return fmt.Errorf("%w: the cluster does not answer: %v", ErrNotReady, err)
			}
			if !out.Status.Allowed {
				return fmt.Errorf("%w: the kubeconfig's user may not %s %s in namespace %q: grant it the Role in %s",
					ErrNotReady, verb, p.Resource, ns, DefaultRole)
			}
		}
	}
	return nil
}

// PolicyRules returns Permissions as the rules of a Role.
func PolicyRules() []rbacv1.PolicyRule {
	out := make([]rbacv1.PolicyRule, 0, len(Permissions))
	for _, p := range Permissions {
		out = append(out, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{p.Resource}, Verbs: p.Verbs})
	}
	return out
}

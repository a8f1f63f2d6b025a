package kubetest

import (
	"context"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ServiceAccountKubeconfig creates the ServiceAccount name in namespace ns
// (and ns, if missing) with the given rules bound to it by a Role of the
// same name, and returns a kubeconfig acting as it (a token from the
// TokenRequest API, valid for an hour). The apiserver authorizes with
// RBAC: the account may do exactly what rules grant (and what every
// authenticated user may, such as SelfSubjectAccessReviews). No rules:
// no Role. Failures fail t.
func (c *Cluster) ServiceAccountKubeconfig(ns, name string, rules []rbacv1.PolicyRule) []byte {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := c.Clientset()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		c.t.Fatalf("kubetest: create namespace %s: %v", ns, err)
	}
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		c.t.Fatalf("kubetest: create service account %s/%s: %v", ns, name, err)
	}
	if len(rules) > 0 {
		if _, err := cs.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
			c.t.Fatalf("kubetest: create role %s/%s: %v", ns, name, err)
		}
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}}}
		if _, err := cs.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
			c.t.Fatalf("kubetest: create role binding %s/%s: %v", ns, name, err)
		}
	}
	hour := int64(3600)
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &hour}}, metav1.CreateOptions{})
	if err != nil {
		c.t.Fatalf("kubetest: token for %s/%s: %v", ns, name, err)
	}
	b, err := kubeconfig(c.URL, c.CAData, tr.Status.Token)
	if err != nil {
		c.t.Fatalf("kubetest: %v", err)
	}
	return b
}

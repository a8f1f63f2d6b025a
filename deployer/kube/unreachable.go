package kube

import (
	"context"
	"errors"
	"net"
	"net/url"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// Unreachable reports whether err says that the cluster did not answer
// (connection refused or reset, a timeout, the API unavailable), as
// opposed to an answer refusing the request: the first is retried.
func Unreachable(err error) bool {
	if err == nil {
		return false
	}
	var ne net.Error
	var ue *url.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return true
	case utilnet.IsConnectionRefused(err), utilnet.IsConnectionReset(err), utilnet.IsProbableEOF(err):
		return true
	case apierrors.IsServiceUnavailable(err), apierrors.IsServerTimeout(err), apierrors.IsTimeout(err),
		apierrors.IsTooManyRequests(err):
		return true
	case errors.As(err, &ne), errors.As(err, &ue):
		return true
	}
	return isDiscoveryFailure(err)
}

// isDiscoveryFailure: discovery wraps what it could not read in errors
// of its own; a mapping that failed for want of an answer says so.
func isDiscoveryFailure(err error) bool {
	var de interface{ Unwrap() []error }
	if errors.As(err, &de) {
		for _, e := range de.Unwrap() {
			if Unreachable(e) {
				return true
			}
		}
	}
	return false
}

// apierrorsNotFound is the NotFound of an object whose kind the cluster
// does not know.
func apierrorsNotFound(gvk schema.GroupVersionKind, name string) error {
	return apierrors.NewNotFound(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}, name)
}

// Package kube is what cairn's Kubernetes deployers (manifest, helm)
// share: their config types for readiness, exports and the record of
// managed objects, the connection to a deploy item's cluster, the
// readiness checks and the exports read from objects.
//
// Config (DESIGN.md "Kubernetes"), decoded from a deploy item's config;
// the types live in package kube/config (pure, imported by admission
// too) and are aliased here:
//   - Readiness {disabled, custom: [CustomCheck]}; ValidateReadiness
//     refuses a bad one naming the field.
//   - Export {key, resource: ObjectRef, jsonPath, fromValues};
//     ValidateExports (fromValues only where the caller allows it: helm).
//   - ManagedResource {apiVersion, kind, namespace, name, uid, policy,
//     ready}: the entries of status.providerStatus.managedResources;
//     Policy is manage, keep or ignore (ParsePolicy).
//
// Clusters (I/O): NewClusters(c, Options) caches one *Cluster per Target,
// rebuilt when the Target's kubeconfig Secret changes (it reuses
// target.Clients and target.RESTConfig, so exec, auth-provider and file
// kubeconfigs are refused). Clusters.For(ctx, item) reads the Secret
// through cairn's API acting for the Target, and returns the Cluster or
// an error wrapping ErrTarget (the Target is not a usable
// kubernetes-cluster: its message names the Secret, key or field, never a
// value). It does not contact the cluster. A Cluster has a dynamic client
// and a RESTMapper (discovery, cached; Cluster.Mapping resets it once on
// an unknown kind, so CRDs applied earlier are found); Cluster.Get reads
// an object by ObjectRef.
//
// Unreachable(err) tells a cluster that does not answer (connection
// refused, timeouts, 503) from a refusal: deployers retry the first with
// backoff within the item's timeout.
//
// Readiness (pure): Check(obj) applies the default check of the object's
// kind (Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, Pod,
// CustomResourceDefinition established, Namespace active; anything else
// is ready when it exists); CheckCustom(obj, check) a custom JSONPath
// check. CheckAll(ctx, getter, refs, readiness) reads the objects and
// returns a Report: every object's State, Report.NotReady() the first
// object that is not, and State.Message says why (its conditions).
//
// Exports: Lookup(obj, jsonPath) reads one value (kubectl JSONPath, braces
// optional); Exports(ctx, getter, values, exports) builds the exports
// object {key: value}, reading each resource through getter (values are
// helm's release values, for fromValues; nil elsewhere).
package kube

package installation

// The names of the objects an installation makes in its context, and the
// short hash they and the import generations use.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
)

// Hash returns a short, stable hash of JSON-encodable values: the
// generation of a value import and an installation's configGeneration.
func Hash(v any) string {
	b, _ := json.Marshal(v)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// maxName is the longest object name (a DNS-1123 label).
const maxName = 63

// ChildName is the name of the nested installation made from a parent's
// subinstallation template: "<parent>-<template>", shortened with a hash
// when that is too long.
func ChildName(parent, sub string) string {
	return joinName(parent, sub)
}

// DataObjectName is the name of the DataObject holding dataRef in a
// context: the dataRef itself in a namespace's root context (""), else
// "<context>-<dataRef>" (shortened with a hash when too long).
func DataObjectName(context, dataRef string) string {
	if context == "" {
		return dataRef
	}
	return joinName(context, dataRef)
}

// TargetName is the name of the Target an installation exports as target
// in a context: named like a DataObject (see DataObjectName).
func TargetName(context, target string) string { return DataObjectName(context, target) }

func joinName(a, b string) string {
	n := a + "-" + b
	if len(n) <= maxName {
		return n
	}
	h := Hash(n)[:8]
	return strings.TrimRight(n[:maxName-9], "-") + "-" + h
}

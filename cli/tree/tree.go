// Package tree prints an installation's tree — the installation, its
// nested installations (to any depth), their executions and the deploy
// items of each, with phases and the last error where there is one — for
// `cairn get installation NAME --tree`.
package tree

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/printer"
	"cairn.dev/cairn/client"
)

// maxDepth bounds the nesting printed (a guard against ownership cycles).
const maxDepth = 32

// node is one line of the tree and what hangs below it.
type node struct {
	line     string
	children []*node
}

// Print writes the tree of the installation ns/name to w. It reads
// through c (installations and executions by label, deploy items by the
// execution's status). Errors: NotFound when the installation does not
// exist; any read error.
func Print(ctx context.Context, c client.Interface, w io.Writer, ns, name string) error {
	root, err := installation(ctx, c, ns, name, 0)
	if err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString(root.line + "\n")
	write(&b, root.children, "")
	_, err = io.WriteString(w, b.String())
	return err
}

func write(b *strings.Builder, nodes []*node, prefix string) {
	for i, n := range nodes {
		branch, next := "├─ ", "│  "
		if i == len(nodes)-1 {
			branch, next = "└─ ", "   "
		}
		b.WriteString(prefix + branch + n.line + "\n")
		write(b, n.children, prefix+next)
	}
}

func line(kind, name, phase string, le *api.LastError, extra string) string {
	if phase == "" {
		phase = "-"
	}
	s := fmt.Sprintf("%s/%s  %s", strings.ToLower(kind), name, phase)
	if extra != "" {
		s += "  " + extra
	}
	if le != nil && le.Message != "" {
		s += "  (" + string(le.Reason) + ": " + le.Message + ")"
	}
	return printer.Escape(s)
}

func installation(ctx context.Context, c client.Interface, ns, name string, depth int) (*node, error) {
	in, err := client.For[*api.Installation](c).Get(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	n := &node{line: line(api.KindInstallation, in.Name, string(in.Status.Phase), in.Status.LastError, "")}
	if depth >= maxDepth {
		return n, nil
	}
	subs, _, err := client.For[*api.Installation](c).List(ctx, ns, api.ListOptions{LabelSelector: api.LabelInstallation + "=" + name})
	if err != nil {
		return nil, err
	}
	for _, s := range subs {
		if ref := s.ControllerRef(); ref == nil || ref.UID != in.UID {
			continue
		}
		child, err := installation(ctx, c, ns, s.Name, depth+1)
		if errors.Is(err, api.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		n.children = append(n.children, child)
	}
	ex, err := client.For[*api.Execution](c).Get(ctx, ns, name)
	if errors.Is(err, api.ErrNotFound) {
		return n, nil
	}
	if err != nil {
		return nil, err
	}
	if ref := ex.ControllerRef(); ref == nil || ref.UID != in.UID {
		return n, nil
	}
	en := &node{line: line(api.KindExecution, ex.Name, string(ex.Status.Phase), ex.Status.LastError, ex.Status.Ready)}
	for _, ref := range ex.Status.DeployItems {
		di, err := client.For[*api.DeployItem](c).Get(ctx, ns, ref.Ref)
		if errors.Is(err, api.ErrNotFound) {
			en.children = append(en.children, &node{line: line(api.KindDeployItem, ref.Ref, "missing", nil, "")})
			continue
		}
		if err != nil {
			return nil, err
		}
		en.children = append(en.children, &node{line: line(api.KindDeployItem, di.Name, string(di.Status.Phase), di.Status.LastError, di.Spec.Type)})
	}
	n.children = append(n.children, en)
	return n, nil
}

package condition

import (
	"fmt"
	"strings"
	"sync"
)

// maxCached bounds the environments and the compiled sets a Compiler
// keeps (each; one arbitrary entry leaves when a new one would pass it).
const maxCached = 1024

// Compiler compiles conditions as Compile does, keeping the environments
// (by variable names) and the compiled sets (by variable names and
// conditions) it built, so Cleaners that share their targets' names and
// their conditions — the usual case, when a tool creates them — share one
// environment and one set of programs. Building an environment costs a
// few hundred microseconds; evaluating a program is the cheap part. A
// Compiler is safe for concurrent use; its zero value is not: use
// NewCompiler.
type Compiler struct {
	mu   sync.Mutex
	sets map[string]compileResult
	// checked holds TypeCheck's issues by typed variables and conditions.
	checked map[string][]Issue
}

type compileResult struct {
	set    *Set
	issues []Issue
}

// NewCompiler returns an empty Compiler.
func NewCompiler() *Compiler {
	return &Compiler{sets: map[string]compileResult{}, checked: map[string][]Issue{}}
}

// TypeCheck is the package's TypeCheck, answered from the cache when the
// same typed variables and conditions were checked before (against the
// same schemas: a Compiler serves one set of schemas). The issues returned
// are shared: never modified.
func (c *Compiler) TypeCheck(vars []TypedVar, conditions []string, s *Schemas) ([]Issue, error) {
	var b strings.Builder
	for _, v := range vars {
		fmt.Fprintf(&b, "%s:%s:%v\x00", v.Name, v.Kind, v.Selected)
	}
	key := b.String() + "\x01" + strings.Join(conditions, "\x00")
	c.mu.Lock()
	issues, ok := c.checked[key]
	c.mu.Unlock()
	if ok {
		return issues, nil
	}
	issues, err := TypeCheck(vars, conditions, s)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if len(c.checked) >= maxCached {
		for k := range c.checked {
			delete(c.checked, k)
			break
		}
	}
	c.checked[key] = issues
	c.mu.Unlock()
	return issues, nil
}

// Compile is the package's Compile, answered from the cache when the same
// variables and conditions were compiled before. The Set and issues
// returned are shared: never modified.
func (c *Compiler) Compile(vars []string, conditions []string) (*Set, []Issue, error) {
	key := strings.Join(vars, "\x00") + "\x01" + strings.Join(conditions, "\x00")
	c.mu.Lock()
	r, ok := c.sets[key]
	c.mu.Unlock()
	if ok {
		return r.set, r.issues, nil
	}
	set, issues, err := Compile(vars, conditions)
	if err != nil {
		return nil, nil, err
	}
	c.mu.Lock()
	if len(c.sets) >= maxCached {
		for k := range c.sets {
			delete(c.sets, k)
			break
		}
	}
	c.sets[key] = compileResult{set: set, issues: issues}
	c.mu.Unlock()
	return set, issues, nil
}

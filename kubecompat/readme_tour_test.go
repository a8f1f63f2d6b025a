package kubecompat_test

import (
	"bufio"
	"fmt"
	"os"
	"strings"
)

// The README's tours are run from the README itself, so the two cannot
// drift: readmeCommands extracts the commands of chosen sections, in
// order, and the tests run them (TestCairn_ReadmeTour).

// tourCommand is one command of the README: its words, as a POSIX shell
// splits them, and the text of its here-document (stdin), if any.
type tourCommand struct {
	line  string
	args  []string
	stdin string
}

// readmeCommands returns the commands that start with prefix (e.g.
// "./cairn ") in the ```sh blocks of the README sections whose headings
// are in sections, in the README's order. Errors: the README cannot be
// read, a section is missing, or a line does not split.
func readmeCommands(path, prefix string, sections []string) ([]tourCommand, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	want := map[string]bool{}
	for _, s := range sections {
		want[s] = true
	}
	found := map[string]bool{}
	var out []tourCommand
	var in, inBlock bool
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			in = want[strings.TrimPrefix(line, "## ")]
			found[strings.TrimPrefix(line, "## ")] = in
			continue
		case !in:
			continue
		case strings.HasPrefix(line, "```"):
			inBlock = line == "```sh"
			continue
		case !inBlock || !strings.HasPrefix(line, prefix):
			continue
		}
		args, heredoc, err := shellWords(line)
		if err != nil {
			return nil, fmt.Errorf("README: %q: %w", line, err)
		}
		cmd := tourCommand{line: line, args: args[1:]}
		if heredoc != "" {
			var body []string
			for sc.Scan() && sc.Text() != heredoc {
				body = append(body, sc.Text())
			}
			cmd.stdin = strings.Join(body, "\n") + "\n"
		}
		out = append(out, cmd)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for _, s := range sections {
		if !found[s] {
			return nil, fmt.Errorf("README has no section %q", s)
		}
	}
	return out, nil
}

// shellWords splits a command line as a POSIX shell does for the README's
// commands: words separated by blanks, 'single' and "double" quotes, a
// comment from an unquoted " #", and a here-document <<'WORD' (whose
// delimiter it returns). It refuses what it does not understand
// (variables, pipes, escapes) rather than run it wrongly.
func shellWords(line string) (words []string, heredoc string, err error) {
	var cur strings.Builder
	inWord := false
	flush := func() {
		if inWord {
			words = append(words, cur.String())
			cur.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			flush()
		case c == '#' && !inWord:
			flush()
			return words, heredoc, nil
		case c == '\'' || c == '"':
			end := strings.IndexByte(line[i+1:], c)
			if end < 0 {
				return nil, "", fmt.Errorf("unterminated quote")
			}
			cur.WriteString(line[i+1 : i+1+end])
			inWord = true
			i += end + 1
		case strings.HasPrefix(line[i:], "<<"):
			flush()
			rest := strings.Fields(line[i+2:])
			if len(rest) == 0 {
				return nil, "", fmt.Errorf("a here-document without a delimiter")
			}
			heredoc = strings.Trim(rest[0], `'"`)
			i += 2 + strings.Index(line[i+2:], rest[0]) + len(rest[0]) - 1
		case strings.ContainsRune("$|;&`\\(){}<>", rune(c)) && !inWord:
			return nil, "", fmt.Errorf("%q is beyond this test's shell", c)
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	flush()
	return words, heredoc, nil
}

// Command check reads `helm template` output on stdin and decodes every manifest
// strictly into its Kubernetes API type (k8s.io/api; sigs.k8s.io/yaml UnmarshalStrict:
// an unknown or misspelt field, a wrong type or an unknown kind is an error), then
// checks what ties the manifests together: probes on the paths each role serves, named
// ports that exist, selectors that match pods, references to objects the chart makes.
// Every problem is printed, not only the first; the exit status is 1 if there was one.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
)

func main() {
	input, err := io.ReadAll(bufio.NewReader(os.Stdin))
	if err != nil {
		fmt.Fprintln(os.Stderr, "check: reading stdin:", err)
		os.Exit(2)
	}
	set, problems := Decode(string(input))
	problems = append(problems, set.Check()...)
	for _, p := range problems {
		fmt.Fprintln(os.Stderr, "check:", p)
	}
	if len(problems) > 0 {
		os.Exit(1)
	}
	fmt.Printf("check: %d manifests decoded strictly (%s), references consistent\n",
		set.Count(), strings.Join(set.Kinds(), ", "))
}

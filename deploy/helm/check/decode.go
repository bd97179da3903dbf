package main

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// Set holds the decoded manifests by kind.
type Set struct {
	Deployments []appsv1.Deployment
	Services    []corev1.Service
	ConfigMaps  []corev1.ConfigMap
	Secrets     []corev1.Secret
	Accounts    []corev1.ServiceAccount
	Claims      []corev1.PersistentVolumeClaim
	Budgets     []policyv1.PodDisruptionBudget
	Autoscalers []autoscalingv2.HorizontalPodAutoscaler
	kinds       map[string]int
}

var separator = regexp.MustCompile(`(?m)^---\s*$`)

// Decode splits a multi-document stream and decodes each document strictly.
func Decode(stream string) (*Set, []string) {
	set := &Set{kinds: map[string]int{}}
	var problems []string
	for i, doc := range separator.Split(stream, -1) {
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		if err := set.add(doc); err != nil {
			problems = append(problems, fmt.Sprintf("document %d (%s): %v", i, source(doc), err))
		}
	}
	if set.Count() == 0 {
		problems = append(problems, "no manifest in the input")
	}
	return set, problems
}

func (s *Set) add(doc string) error {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
		return err
	}
	key := tm.APIVersion + "/" + tm.Kind
	var err error
	switch key {
	case "apps/v1/Deployment":
		s.Deployments, err = decodeInto(doc, s.Deployments)
	case "v1/Service":
		s.Services, err = decodeInto(doc, s.Services)
	case "v1/ConfigMap":
		s.ConfigMaps, err = decodeInto(doc, s.ConfigMaps)
	case "v1/Secret":
		s.Secrets, err = decodeInto(doc, s.Secrets)
	case "v1/ServiceAccount":
		s.Accounts, err = decodeInto(doc, s.Accounts)
	case "v1/PersistentVolumeClaim":
		s.Claims, err = decodeInto(doc, s.Claims)
	case "policy/v1/PodDisruptionBudget":
		s.Budgets, err = decodeInto(doc, s.Budgets)
	case "autoscaling/v2/HorizontalPodAutoscaler":
		s.Autoscalers, err = decodeInto(doc, s.Autoscalers)
	default:
		return fmt.Errorf("kind %q of apiVersion %q is not one this chart should render", tm.Kind, tm.APIVersion)
	}
	if err == nil {
		s.kinds[tm.Kind]++
	}
	return err
}

// decodeInto decodes doc strictly as T and appends it.
func decodeInto[T any](doc string, into []T) ([]T, error) {
	var v T
	if err := yaml.UnmarshalStrict([]byte(doc), &v); err != nil {
		return into, err
	}
	return append(into, v), nil
}

// Count is the number of manifests decoded.
func (s *Set) Count() int {
	n := 0
	for _, c := range s.kinds {
		n += c
	}
	return n
}

// Kinds lists "N Kind" for each kind decoded, sorted.
func (s *Set) Kinds() []string {
	var out []string
	for k, n := range s.kinds {
		out = append(out, fmt.Sprintf("%d %s", n, k))
	}
	sort.Strings(out)
	return out
}

// source is the template a document came from (helm's `# Source:` line).
func source(doc string) string {
	for _, line := range strings.Split(doc, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "# Source: "); ok {
			return rest
		}
	}
	return "unknown source"
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

package main

import (
	"strings"
	"testing"
)

const deployment = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: gw}
spec:
  selector: {matchLabels: {app: gw}}
  template:
    metadata: {labels: {app: gw}}
    spec:
      securityContext: {runAsNonRoot: true}
      containers:
        - name: gw
          image: turnpike
          ports: [{name: management, containerPort: 9091}]
          resources: {requests: {cpu: "1", memory: 256Mi}}
          livenessProbe: {httpGet: {path: /health, port: management}}
          readinessProbe: {httpGet: {path: /ready, port: management}}
`

func problems(stream string) []string {
	set, p := Decode(stream)
	return append(p, set.Check()...)
}

func TestAConsistentDeploymentPasses(t *testing.T) {
	if p := problems(deployment); len(p) != 0 {
		t.Fatalf("unexpected problems: %v", p)
	}
}

func TestAMisspeltFieldIsRefused(t *testing.T) {
	doc := strings.Replace(deployment, "readinessProbe", "readynessProbe", 1)
	p := problems(doc)
	if len(p) == 0 || !strings.Contains(strings.Join(p, "\n"), "readynessProbe") {
		t.Fatalf("strict decoding let a misspelt field through: %v", p)
	}
}

func TestAWrongProbePathAndAnUndeclaredPortAreReported(t *testing.T) {
	doc := strings.Replace(deployment, "path: /ready", "path: /healthz", 1)
	doc = strings.Replace(doc, "{path: /health, port: management}", "{path: /health, port: admin}", 1)
	p := strings.Join(problems(doc), "\n")
	for _, want := range []string{`path "/healthz"`, "port admin is not declared"} {
		if !strings.Contains(p, want) {
			t.Errorf("missing %q in %s", want, p)
		}
	}
}

func TestAServiceSelectingNoPodsAndAnUnknownKindAreReported(t *testing.T) {
	doc := deployment + `---
apiVersion: v1
kind: Service
metadata: {name: gw}
spec:
  selector: {app: other}
  ports: [{port: 80, targetPort: http}]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: x}
`
	p := strings.Join(problems(doc), "\n")
	for _, want := range []string{"Service gw selects no Deployment", `kind "Ingress"`} {
		if !strings.Contains(p, want) {
			t.Errorf("missing %q in %s", want, p)
		}
	}
}

func TestAnAutoscaledDeploymentMustNotSetReplicas(t *testing.T) {
	doc := strings.Replace(deployment, "spec:\n  selector", "spec:\n  replicas: 2\n  selector", 1) + `---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: gw}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: gw}
  maxReplicas: 3
`
	if p := strings.Join(problems(doc), "\n"); !strings.Contains(p, "sets replicas") {
		t.Fatalf("replicas beside an HPA not reported: %s", p)
	}
}

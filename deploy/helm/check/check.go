package main

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Check returns every inconsistency between the decoded manifests.
func (s *Set) Check() []string {
	var p []string
	for _, d := range s.Deployments {
		p = append(p, s.checkDeployment(d)...)
	}
	for _, svc := range s.Services {
		d, ok := s.selecting(svc.Spec.Selector)
		if !ok {
			p = append(p, fmt.Sprintf("Service %s selects no Deployment's pods", svc.Name))
			continue
		}
		for _, port := range svc.Spec.Ports {
			if !hasPort(d.Spec.Template.Spec.Containers, port.TargetPort) {
				p = append(p, fmt.Sprintf("Service %s: targetPort %s is no port of Deployment %s", svc.Name, port.TargetPort.String(), d.Name))
			}
		}
	}
	for _, b := range s.Budgets {
		if _, ok := s.selecting(selectorMap(b.Spec.Selector)); !ok {
			p = append(p, fmt.Sprintf("PodDisruptionBudget %s selects no Deployment's pods", b.Name))
		}
	}
	for _, h := range s.Autoscalers {
		d, ok := s.deployment(h.Spec.ScaleTargetRef.Name)
		switch {
		case h.Spec.ScaleTargetRef.Kind != "Deployment" || !ok:
			p = append(p, fmt.Sprintf("HorizontalPodAutoscaler %s scales %s %s, not a Deployment of the chart", h.Name, h.Spec.ScaleTargetRef.Kind, h.Spec.ScaleTargetRef.Name))
		case d.Spec.Replicas != nil:
			p = append(p, fmt.Sprintf("Deployment %s sets replicas although HorizontalPodAutoscaler %s owns them (each upgrade would reset the scale)", d.Name, h.Name))
		}
	}
	return p
}

// checkDeployment: probes on /health and /ready at declared ports, resources requested,
// non-root, and every ConfigMap and claim it names rendered by the chart.
func (s *Set) checkDeployment(d appsv1.Deployment) []string {
	var p []string
	pod := d.Spec.Template.Spec
	if _, ok := s.selecting(d.Spec.Template.Labels); !ok || !matches(selectorMap(d.Spec.Selector), d.Spec.Template.Labels) {
		p = append(p, fmt.Sprintf("Deployment %s: its selector does not match its pod labels", d.Name))
	}
	if pod.SecurityContext == nil || pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot {
		p = append(p, fmt.Sprintf("Deployment %s: pods must run as non-root", d.Name))
	}
	for _, c := range pod.Containers {
		where := fmt.Sprintf("Deployment %s container %s", d.Name, c.Name)
		p = append(p, checkProbe(where+" liveness", c.LivenessProbe, "/health", pod.Containers)...)
		p = append(p, checkProbe(where+" readiness", c.ReadinessProbe, "/ready", pod.Containers)...)
		if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
			p = append(p, where+": cpu and memory requests are needed (sizing, HPA)")
		}
		for _, e := range c.EnvFrom {
			if e.ConfigMapRef != nil && !s.hasConfigMap(e.ConfigMapRef.Name) {
				p = append(p, fmt.Sprintf("%s: ConfigMap %s is not rendered", where, e.ConfigMapRef.Name))
			}
		}
	}
	for _, v := range pod.Volumes {
		if v.PersistentVolumeClaim != nil && !s.hasClaim(v.PersistentVolumeClaim.ClaimName) {
			p = append(p, fmt.Sprintf("Deployment %s: claim %s is not rendered", d.Name, v.PersistentVolumeClaim.ClaimName))
		}
	}
	return p
}

func checkProbe(where string, probe *corev1.Probe, path string, containers []corev1.Container) []string {
	switch {
	case probe == nil || probe.HTTPGet == nil:
		return []string{where + ": an HTTP probe is needed"}
	case probe.HTTPGet.Path != path:
		return []string{fmt.Sprintf("%s probe: path %q, the role serves %q", where, probe.HTTPGet.Path, path)}
	case !hasPort(containers, probe.HTTPGet.Port):
		return []string{fmt.Sprintf("%s probe: port %s is not declared", where, probe.HTTPGet.Port.String())}
	}
	return nil
}

func hasPort(containers []corev1.Container, port intstr.IntOrString) bool {
	for _, c := range containers {
		for _, cp := range c.Ports {
			if (port.Type == intstr.String && cp.Name == port.StrVal) ||
				(port.Type == intstr.Int && cp.ContainerPort == port.IntVal) {
				return true
			}
		}
	}
	return false
}

func selectorMap(sel *metav1.LabelSelector) map[string]string {
	if sel == nil {
		return nil
	}
	return sel.MatchLabels
}

// matches: every label of the selector is on the pod (an empty selector matches none).
func matches(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// selecting finds the one Deployment whose pods the selector matches.
func (s *Set) selecting(selector map[string]string) (appsv1.Deployment, bool) {
	var found []appsv1.Deployment
	for _, d := range s.Deployments {
		if matches(selector, d.Spec.Template.Labels) {
			found = append(found, d)
		}
	}
	if len(found) != 1 {
		return appsv1.Deployment{}, false
	}
	return found[0], true
}

func (s *Set) deployment(name string) (appsv1.Deployment, bool) {
	for _, d := range s.Deployments {
		if d.Name == name {
			return d, true
		}
	}
	return appsv1.Deployment{}, false
}

func (s *Set) hasConfigMap(name string) bool {
	for _, c := range s.ConfigMaps {
		if c.Name == name {
			return true
		}
	}
	return false
}

func (s *Set) hasClaim(name string) bool {
	for _, c := range s.Claims {
		if c.Name == name {
			return true
		}
	}
	return false
}

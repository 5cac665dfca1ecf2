{{/*
Labels of every object: weft.labels with (dict "ctx" $ "name" "<component>").
app.kubernetes.io/name is the component (weft-rm, weft-nodeplugin,
weft-tide): the base's selectors, the weft-rm Service and the monitors
select by it.
*/}}
{{- define "weft.labels" -}}
app.kubernetes.io/name: {{ .name }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/part-of: weft
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .ctx.Chart.Name .ctx.Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Labels of pod templates: no chart version, so that an upgrade that changes
nothing else rolls no pod.
*/}}
{{- define "weft.podLabels" -}}
app.kubernetes.io/name: {{ .name }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/part-of: weft
{{- end }}

{{/* Selectors: the component alone, as the base's (selectors are immutable). */}}
{{- define "weft.selectorLabels" -}}
app.kubernetes.io/name: {{ .name }}
{{- end }}

{{- define "weft.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{/* The profile, checked: weft-rm and the node plugin would exit on another. */}}
{{- define "weft.profile" -}}
{{- $p := .Values.profile -}}
{{- if not (has $p (list "weft" "plain" "katalyst" "koordinator")) -}}
{{- fail (printf "profile %q: want weft, plain, katalyst or koordinator" $p) -}}
{{- end -}}
{{ $p }}
{{- end }}

{{/*
"true" when the node plugin runs its colocation agent: the weft profile
with nodePlugin.colocation.enabled (weft-nodeplugin runs it only then).
*/}}
{{- define "weft.colocation" -}}
{{- if and (eq (include "weft.profile" .) "weft") .Values.nodePlugin.colocation.enabled -}}
true
{{- end -}}
{{- end }}

{{/* weft-rm's REST address in the cluster: the Service's DNS name. */}}
{{- define "weft.rmHost" -}}
weft-rm.{{ .Values.namespaces.system }}.svc
{{- end }}

{{/*
KUBERNETES_SERVICE_HOST/PORT for every Weft container when apiServer says
where the API server is (client-go's in-cluster config reads them): for
clusters whose pods cannot use the kubernetes Service.
*/}}
{{- define "weft.apiServerEnv" -}}
{{- with .Values.apiServer.host }}
- {name: KUBERNETES_SERVICE_HOST, value: {{ . | quote }}}
{{- end }}
{{- with .Values.apiServer.port }}
- {name: KUBERNETES_SERVICE_PORT, value: {{ . | toString | quote }}}
{{- end }}
{{- end }}

{{/*
A pod on the node's network resolves cluster names through the cluster's
DNS still (ClusterFirstWithHostNet).
*/}}
{{- define "weft.hostNetwork" -}}
hostNetwork: true
dnsPolicy: ClusterFirstWithHostNet
{{- end }}

{{/*
"host: <address>, " for a probe of a server bound to one address (the
kubelet probes the pod's IP otherwise); nothing for every interface.
*/}}
{{- define "weft.probeHost" -}}
{{- if and . (ne . "0.0.0.0") }}host: {{ . }}, {{ end -}}
{{- end }}

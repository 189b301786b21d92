{{- define "wanwide.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- /* <release>-wanwide, or the release name alone when it already contains the chart's name; 40 characters
       at most so that "<fullname>-trial" and "<fullname>-metrics" stay valid names */ -}}
{{- define "wanwide.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "wanwide.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- define "wanwide.serviceAccount" -}}
{{- if .Values.serviceAccount.create -}}{{ .Values.serviceAccount.name | default (include "wanwide.fullname" .) }}
{{- else -}}{{ .Values.serviceAccount.name | default "default" }}{{- end -}}
{{- end -}}
{{- /* one image for the operator and, by default, every Benchmark's Rally Jobs */ -}}
{{- define "wanwide.image" -}}
{{- if .Values.image.digest -}}{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}{{- end -}}
{{- end -}}
{{- define "wanwide.labels" -}}
app.kubernetes.io/name: {{ include "wanwide.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version | replace "+" "_" }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}
{{- define "wanwide.selector" -}}
app.kubernetes.io/name: {{ include "wanwide.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}
{{- define "wanwide.watch" -}}
{{- if .Values.watchNamespaces }}{{ join "," .Values.watchNamespaces }}{{ else }}{{ .Release.Namespace }}{{ end -}}
{{- end -}}
{{- /* what the operator needs in a namespace it watches (a Role there, or a ClusterRole when clusterWide) */ -}}
{{- define "wanwide.watchRules" -}}
- apiGroups: [wanwide.io]
  resources: [benchmarks, topologies]
  verbs: [get, list, watch, patch]
- apiGroups: [wanwide.io]
  resources: [trials]
  verbs: [list, watch, create, patch, delete]
- apiGroups: [wanwide.io]
  resources: [benchmarks/status, topologies/status, trials/status]
  verbs: [patch]
- apiGroups: [""]
  resources: [events]
  verbs: [create]
# the results keys (read; the generated one created) and an ObjectBucketClaim's ConfigMap
- apiGroups: [""]
  resources: [secrets]
  verbs: [get, create, patch]
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get]
# spec.runner.pod.serviceAccountName: copied, with its annotations, into each region's namespace
- apiGroups: [""]
  resources: [serviceaccounts]
  verbs: [get]
# trial children kopf watches: clusterWide, a change wakes its Trial at once (not the kinds of
# Chaos Mesh and mariadb-operator: their CRDs can be deleted, and kopf stops on a watch's 404;
# their objects are polled instead)
- apiGroups: [batch]
  resources: [jobs]
  verbs: [list, watch]
- apiGroups: [apps]
  resources: [deployments]
  verbs: [list, watch]
{{- end -}}

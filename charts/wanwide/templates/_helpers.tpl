{{- define "wanwide.name" -}}wanwide{{- end -}}
{{- define "wanwide.fullname" -}}{{ .Release.Name | trunc 40 | trimSuffix "-" }}-wanwide{{- end -}}
{{- define "wanwide.serviceAccount" -}}{{ .Values.serviceAccount.name | default (include "wanwide.fullname" .) }}{{- end -}}
{{- define "wanwide.labels" -}}
app.kubernetes.io/name: wanwide
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
{{- end -}}
{{- define "wanwide.selector" -}}
app.kubernetes.io/name: wanwide
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
# trial children kopf watches: clusterWide, a change wakes its Trial at once
- apiGroups: [batch]
  resources: [jobs]
  verbs: [list, watch]
- apiGroups: [apps]
  resources: [deployments]
  verbs: [list, watch]
- apiGroups: [chaos-mesh.org]
  resources: [networkchaos]
  verbs: [list, watch]
- apiGroups: [k8s.mariadb.com]
  resources: [mariadbs]
  verbs: [list, watch]
{{- end -}}

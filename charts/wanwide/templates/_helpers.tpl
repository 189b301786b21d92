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
- apiGroups: [""]
  resources: [secrets]
  verbs: [get, list, watch, create, patch]
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get, list, watch]
- apiGroups: [coordination.k8s.io]
  resources: [leases]
  verbs: [get, list, watch, create, update, patch]
{{- end -}}

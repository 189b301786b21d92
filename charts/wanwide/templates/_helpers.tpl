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

{{/* Name of every object: the release name, with "-sextant" unless it says so already. */}}
{{- define "sextant.fullname" -}}
{{- if contains "sextant" .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-sextant" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "sextant.selectorLabels" -}}
app.kubernetes.io/name: sextant
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "sextant.labels" -}}
{{ include "sextant.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The Secret holding the admin token, database URL and API keys. */}}
{{- define "sextant.secretName" -}}
{{- if .Values.existingSecret -}}
{{- .Values.existingSecret -}}
{{- else -}}
{{- include "sextant.fullname" . -}}
{{- end -}}
{{- end -}}

{{/* The server's base path: "" or "/prefix" (no trailing slash). */}}
{{- define "sextant.basePath" -}}
{{- if .Values.ingress.basePath -}}
{{- printf "/%s" (trimAll "/" .Values.ingress.basePath) -}}
{{- end -}}
{{- end -}}

{{/* An optional key of the Secret as an environment variable. */}}
{{- define "sextant.secretEnv" -}}
- name: {{ .name }}
  valueFrom:
    secretKeyRef:
      name: {{ .secret }}
      key: {{ .key }}
      optional: true
{{- end -}}

{{/* Whether more than one pod may run (replicas > 1, or the autoscaler). */}}
{{- define "sextant.scaled" -}}
{{- if or (gt (int .Values.replicas) 1) .Values.autoscaling.enabled }}true{{ end }}
{{- end -}}

{{/* Values that do not fit together. */}}
{{- define "sextant.checks" -}}
{{- if include "sextant.scaled" . }}
{{- if not .Values.postgres.enabled }}
{{- fail "more than one replica (or autoscaling) needs postgres.enabled: jobs, leases and events are shared through PostgreSQL" }}
{{- end }}
{{- if not .Values.objectStore.enabled }}
{{- fail "more than one replica (or autoscaling) needs objectStore.enabled with objectStore.uri: the chunk store and grep index must live on object storage, not on one pod's volume" }}
{{- end }}
{{- end }}
{{- if and .Values.objectStore.enabled (not .Values.objectStore.uri) }}
{{- fail "objectStore.enabled needs objectStore.uri (s3://bucket/prefix)" }}
{{- end }}
{{- if and .Values.autoscaling.enabled (gt (int .Values.autoscaling.minReplicas) (int .Values.autoscaling.maxReplicas)) }}
{{- fail "autoscaling.minReplicas is above autoscaling.maxReplicas" }}
{{- end }}
{{- end -}}

{{/*
Names. With the release name "sro" (as the docs install it) every object has the name it
has in manifests/: sro, sro-manager, sro-metrics, sro-leader-election.
*/}}
{{- define "sro.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "sro.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* The operator's ServiceAccount; the admission policy names it. */}}
{{- define "sro.serviceAccountName" -}}
{{- default (include "sro.fullname" .) .Values.serviceAccount.name }}
{{- end }}

{{/* Labels on every object; selectors use only the two stable ones. */}}
{{- define "sro.labels" -}}
app.kubernetes.io/name: {{ include "sro.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: sro
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "sro.selectorLabels" -}}
app.kubernetes.io/name: {{ include "sro.name" . }}
app.kubernetes.io/component: manager
{{- end }}

{{/*
The image: repository:tag, the tag defaulting to the chart's appVersion, and @digest when
a digest is given (what hack/release pins: the digest decides what is pulled, the tag
stays for people). Kustomize writes the same form for newTag plus digest.
*/}}
{{- define "sro.image" -}}
{{- $image := .Values.image }}
{{- $ref := printf "%s:%s" $image.repository (default .Chart.AppVersion $image.tag) }}
{{- if $image.digest }}
{{- $ref = printf "%s@%s" $ref $image.digest }}
{{- end }}
{{- $ref }}
{{- end }}

{{/* host:port for a listener on every interface of the pod. */}}
{{- define "sro.bindAddress" -}}
{{- printf "0.0.0.0:%v" . }}
{{- end }}

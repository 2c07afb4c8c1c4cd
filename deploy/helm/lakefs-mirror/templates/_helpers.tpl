{{/* Names: <release>-lakefs-mirror unless the release name already contains the chart name. */}}
{{- define "lakefs-mirror.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "lakefs-mirror.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "lakefs-mirror.labels" -}}
{{ include "lakefs-mirror.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "lakefs-mirror.serviceAccountName" -}}
{{- .Values.replication.serviceAccountName | default (include "lakefs-mirror.fullname" .) -}}
{{- end -}}

{{- define "lakefs-mirror.image" -}}
{{- $image := .Values.replication.image -}}
{{- printf "%s:%s" $image.repository ($image.tag | default .Chart.AppVersion | toString) -}}
{{- end -}}

{{/*
The config without its secrets, as YAML. Keys named like the config's secret fields are dropped at any depth; a
placeholder ("<shared-secret>", as the reference writes it) or an empty value is dropped silently, a real value
fails the render: the ConfigMap is readable by anyone who can read the namespace's ConfigMaps.
Called with (dict "value" <map> "path" <text>).
*/}}
{{- define "lakefs-mirror.publicConfig" -}}
{{- $secretKeys := list "secret_key" "secret_access_key" "access_key_id" "aws_secret_access_key" "aws_access_key_id" "session_token" "credentials_json" "storage_access_key" "connection_string" "secret" -}}
{{- $out := dict -}}
{{- range $key, $value := .value -}}
{{- $path := printf "%s.%s" $.path $key -}}
{{- if has $key $secretKeys -}}
{{- if and $value (not (regexMatch "^<.*>$" (toString $value))) -}}
{{- fail (printf "%s holds a secret, which would land in a ConfigMap: put it in the secret named by replication.extraEnvVarsSecret instead (auth.encrypt.secret_key as auth_encrypt_secret_key, lakefs.* as source_lakefs_access_key_id / source_lakefs_secret_access_key, any other field as REPLICATION_%s)" $path (regexReplaceAll "[^A-Z0-9]+" (upper (trimPrefix "replication.config." $path)) "_")) -}}
{{- end -}}
{{- else if kindIs "map" $value -}}
{{- $inner := include "lakefs-mirror.publicConfig" (dict "value" $value "path" $path) | fromYaml -}}
{{- if $inner -}}
{{- $_ := set $out $key $inner -}}
{{- end -}}
{{- else -}}
{{- $_ := set $out $key $value -}}
{{- end -}}
{{- end -}}
{{- toYaml $out -}}
{{- end -}}

{{- /* Both containers: the ConfigMap at REPLICATION_CONFIG, the secret's keys as variables of the same names. */}}
{{- define "lakefs-mirror.containerCommon" -}}
{{- /* (dict "root" $ "tlsSecret" NAME): NAME mounts that TLS Secret at /etc/lakefs-mirror-tls (serve only). */}}
{{- $tls := .tlsSecret }}
{{- with .root -}}
image: {{ include "lakefs-mirror.image" . | quote }}
imagePullPolicy: {{ .Values.replication.image.pullPolicy }}
env:
  - name: REPLICATION_CONFIG
    value: /etc/lakefs-mirror/config.yaml
  {{- with .Values.replication.refstoreDatabase }}
  {{- if .secretName }}
  - name: REPLICATION_REFSTORE_DATABASE_TYPE
    value: postgres
  - name: REPLICATION_REFSTORE_DATABASE_POSTGRES_CONNECTION_STRING
    valueFrom:
      secretKeyRef:
        name: {{ .secretName | quote }}
        key: {{ .secretKey | quote }}
  {{- end }}
  {{- end }}
  {{- with .Values.replication.extraEnv }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- with .Values.replication.extraEnvVarsSecret }}
envFrom:
  - secretRef:
      name: {{ . }}
{{- end }}
volumeMounts:
  - name: config
    mountPath: /etc/lakefs-mirror
    readOnly: true
  - name: tmp
    mountPath: /tmp
  # The image's HOME, writable although the root filesystem is read-only.
  - name: home
    mountPath: /home/lakefs-mirror
{{- if $tls }}
  - name: tls
    mountPath: /etc/lakefs-mirror-tls
    readOnly: true
{{- end }}
{{- with .Values.replication.securityContext }}
securityContext:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}
{{- end }}

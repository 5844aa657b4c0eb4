{{/*
A Forecourt "component": one Deployment of the image running one command, with the chart's settings, secret
references, security contexts, drain and /tmp volume. The server is the component "server"; other workloads
(per-family adapter Deployments, ...) include the same template with their own name, args and values:

  {{ include "forecourt.componentDeployment" (dict "root" $ "component" "adapters-crm" "args" (list "serve" ...)
       "values" $.Values.adapters.crm) }}

"values" may set: replicaCount, autoscaled (no replicas field; an HPA sets them), containerPort (0: no port and
no HTTP probes), resources, podAnnotations, env (extra plain settings), nodeSelector, affinity, tolerations.
The server keeps the selector it always had (a Deployment's selector cannot change on upgrade); every other
component gets its own name label, so no two Deployments select each other's pods.
*/}}
{{- define "forecourt.componentSelectorLabels" -}}
{{- if eq .component "server" -}}
{{ include "forecourt.selectorLabels" .root }}
{{- else -}}
app.kubernetes.io/name: {{ printf "%s-%s" (include "forecourt.name" .root) .component | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}
{{- end -}}

{{/* The pods the Service, the PodDisruptionBudget and the ServiceMonitor select: the server's only. */}}
{{- define "forecourt.serverPodLabels" -}}
{{ include "forecourt.selectorLabels" . }}
app.kubernetes.io/component: server
{{- end -}}

{{- define "forecourt.componentName" -}}
{{- if eq .component "server" -}}
{{ include "forecourt.fullname" .root }}
{{- else -}}
{{ printf "%s-%s" (include "forecourt.fullname" .root) .component | trunc 63 | trimSuffix "-" }}
{{- end -}}
{{- end -}}

{{- define "forecourt.componentDeployment" -}}
{{- $root := .root -}}
{{- $v := .values -}}
{{- $d := $root.Values.drain -}}
{{- $port := int (default 0 $v.containerPort) -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "forecourt.componentName" . }}
  labels:
    {{- include "forecourt.labels" $root | nindent 4 }}
    app.kubernetes.io/component: {{ .component }}
spec:
  {{- if not $v.autoscaled }}
  replicas: {{ $v.replicaCount }}
  {{- end }}
  strategy:
    type: RollingUpdate
    rollingUpdate: {maxUnavailable: 0, maxSurge: 1}
  selector:
    matchLabels:
      {{- include "forecourt.componentSelectorLabels" . | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "forecourt.componentSelectorLabels" . | nindent 8 }}
        {{- if eq .component "server" }}
        app.kubernetes.io/component: server
        {{- end }}
      {{- with $v.podAnnotations }}
      annotations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
    spec:
      serviceAccountName: {{ include "forecourt.serviceAccountName" $root }}
      {{- with $root.Values.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      securityContext:
        {{- toYaml $root.Values.podSecurityContext | nindent 8 }}
      terminationGracePeriodSeconds: {{ add $d.preStopSleepSeconds $d.drainPeriodSeconds $d.drainTimeoutSeconds 10 }}
      containers:
        - name: {{ eq .component "server" | ternary "forecourt" .component }}
          image: {{ include "forecourt.image" $root | quote }}
          imagePullPolicy: {{ $root.Values.image.pullPolicy }}
          args: {{ toJson .args }}
          {{- if $port }}
          ports:
            - name: http
              containerPort: {{ $port }}
              protocol: TCP
          {{- end }}
          env:
            - name: FORECOURT_INSTANCE_NAME
              valueFrom:
                fieldRef: {fieldPath: metadata.name}
            - name: FORECOURT_DRAIN_PERIOD_S
              value: {{ $d.drainPeriodSeconds | quote }}
            - name: FORECOURT_DRAIN_TIMEOUT_S
              value: {{ $d.drainTimeoutSeconds | quote }}
            {{- range $name, $value := $v.env }}
            - name: {{ $name }}
              value: {{ $value | toString | quote }}
            {{- end }}
            {{- include "forecourt.env" $root | nindent 12 }}
          {{- if $port }}
          {{- $p := $root.Values.probes }}
          readinessProbe:
            httpGet: {path: {{ $p.readiness.path }}, port: http}
            periodSeconds: {{ $p.readiness.periodSeconds }}
            timeoutSeconds: {{ $p.readiness.timeoutSeconds }}
            failureThreshold: {{ $p.readiness.failureThreshold }}
          livenessProbe:
            httpGet: {path: {{ $p.liveness.path }}, port: http}
            periodSeconds: {{ $p.liveness.periodSeconds }}
            timeoutSeconds: {{ $p.liveness.timeoutSeconds }}
            failureThreshold: {{ $p.liveness.failureThreshold }}
          startupProbe:
            httpGet: {path: {{ $p.startup.path }}, port: http}
            periodSeconds: {{ $p.startup.periodSeconds }}
            timeoutSeconds: {{ $p.startup.timeoutSeconds }}
            failureThreshold: {{ $p.startup.failureThreshold }}
          {{- end }}
          lifecycle:
            preStop:
              # Let the endpoint removal reach every proxy before SIGTERM starts Forecourt's own drain.
              exec:
                command: ["sleep", "{{ $d.preStopSleepSeconds }}"]
          resources:
            {{- toYaml (default $root.Values.resources $v.resources) | nindent 12 }}
          securityContext:
            {{- toYaml $root.Values.securityContext | nindent 12 }}
          volumeMounts:
            # The root filesystem is read-only: worker metrics (PROMETHEUS_MULTIPROC_DIR) and temp files go here.
            - name: tmp
              mountPath: /tmp
      volumes:
        - name: tmp
          emptyDir: {}
      {{- with (default $root.Values.nodeSelector $v.nodeSelector) }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with (default $root.Values.affinity $v.affinity) }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with (default $root.Values.tolerations $v.tolerations) }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
{{- end -}}

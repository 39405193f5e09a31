-- Argo CD health check for ergon.dev/WorkspacePool (resource.customizations.health.ergon.dev_WorkspacePool).
-- The pool controller writes the Ready condition: True (as many warm pods ready as spec.replicas
-- asks) is Healthy; False because the pool's last editor may not create pods or claims
-- (NotAuthorized) or admission stamped no editor (NoIdentity) is Degraded; anything else
-- (warm pods starting) Progressing. The condition's message says how many are ready, or why not.
hs = {status = "Progressing", message = "Waiting for Ergon to warm the pool"}
if obj.status == nil or obj.status.observedGeneration == nil then
  return hs
end
if obj.status.observedGeneration ~= obj.metadata.generation then
  hs.message = "Waiting for Ergon to apply the latest generation"
  return hs
end
if obj.status.conditions ~= nil then
  for _, c in ipairs(obj.status.conditions) do
    if c.type == "Ready" then
      hs.message = c.message or ""
      if c.status == "True" then
        hs.status = "Healthy"
      elseif c.reason == "NotAuthorized" or c.reason == "NoIdentity" then
        hs.status = "Degraded"
      end
    end
  end
end
return hs

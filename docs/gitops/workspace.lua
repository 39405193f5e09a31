-- Argo CD health check for ergon.dev/Workspace (resource.customizations.health.ergon.dev_Workspace).
-- The Workspace controller writes status.phase: Running is Healthy, Idle (pod stopped after its
-- idleTimeout, volume kept; it starts again on use) Suspended, Failed Degraded, anything else
-- (Pending: the pod starting or being replaced) Progressing. The Ready condition's message says why.
hs = {status = "Progressing", message = "Waiting for Ergon to start the Workspace"}
if obj.status == nil or obj.status.observedGeneration == nil then
  return hs
end
if obj.status.observedGeneration ~= obj.metadata.generation then
  hs.message = "Waiting for Ergon to apply the latest generation"
  return hs
end
local phase = obj.status.phase
hs.message = "Workspace " .. (phase or "Pending")
if obj.status.conditions ~= nil then
  for _, c in ipairs(obj.status.conditions) do
    if c.type == "Ready" and c.message ~= nil and c.message ~= "" then
      hs.message = c.message
    end
  end
end
if phase == "Running" then
  hs.status = "Healthy"
elseif phase == "Idle" then
  hs.status = "Suspended"
elseif phase == "Failed" then
  hs.status = "Degraded"
else
  hs.status = "Progressing"
end
return hs

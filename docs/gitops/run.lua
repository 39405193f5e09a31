-- Argo CD health check for ergon.dev/Run (resource.customizations.health.ergon.dev_Run).
-- A Run waiting on a Gate is Suspended: a person must decide the Gate. So is a Run whose
-- spec.suspend is set (phase Suspended): it resumes when spec.suspend is false.
hs = {status = "Progressing", message = "Waiting for the Run to start"}
if obj.status == nil or obj.status.phase == nil then
  return hs
end
local message = "Run " .. obj.status.phase
if obj.status.conditions ~= nil then
  for _, c in ipairs(obj.status.conditions) do
    if c.type == "Succeeded" and c.message ~= nil and c.message ~= "" then
      message = c.message
    end
  end
end
hs.message = message
local phase = obj.status.phase
if phase == "Succeeded" then
  hs.status = "Healthy"
elseif phase == "Failed" or phase == "Cancelled" then
  hs.status = "Degraded"
elseif phase == "Waiting" or phase == "Suspended" then
  hs.status = "Suspended"
end
return hs

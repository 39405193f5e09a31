-- Argo CD health check for ergon.dev/Scene (resource.customizations.health.ergon.dev_Scene).
-- Ready=True: the Scene compiles and every Scene and Workspace it names exists.
hs = {status = "Progressing", message = "Waiting for Ergon to compile the Scene"}
if obj.status == nil or obj.status.observedGeneration == nil then
  return hs
end
if obj.status.observedGeneration ~= obj.metadata.generation then
  hs.message = "Waiting for Ergon to compile the latest generation"
  return hs
end
if obj.status.conditions ~= nil then
  for _, c in ipairs(obj.status.conditions) do
    if c.type == "Stalled" and c.status == "True" then
      hs.status = "Degraded"
      hs.message = c.message
      return hs
    end
    if c.type == "Ready" then
      hs.message = c.message
      if c.status == "True" then
        hs.status = "Healthy"
      end
    end
  end
end
return hs

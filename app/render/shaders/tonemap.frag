#version 330 core
// Tone mapping, fragment stage: accumulated light (plus its blurred bright part, the bloom) ->
// exposure -> filmic curve -> gamma.
// Filmic curve: Narkowicz's fit of the ACES reference rendering transform (2015), which rises
// monotonically and is clamped to [0, 1], so bright cores go smoothly to white.

uniform sampler2D accumulation;
uniform float exposure;
uniform float gamma;
uniform ivec2 origin;        // lower-left pixel of the viewport in the output framebuffer
uniform sampler2D bloom;     // half-size blurred bright light
uniform float bloom_strength;  // 0: no glow

out vec4 colour;

vec3 filmic(vec3 x) {
    return clamp((x * (2.51 * x + 0.03)) / (x * (2.43 * x + 0.59) + 0.14), 0.0, 1.0);
}

void main() {
    ivec2 pixel = ivec2(gl_FragCoord.xy) - origin;
    vec3 light = texelFetch(accumulation, pixel, 0).rgb;
    if (bloom_strength > 0.0) {
        vec2 uv = (vec2(pixel) + 0.5) / vec2(textureSize(accumulation, 0));
        light += bloom_strength * texture(bloom, uv).rgb;
    }
    vec3 mapped = filmic(max(light, vec3(0.0)) * exposure);
    colour = vec4(pow(mapped, vec3(1.0 / gamma)), 1.0);
}

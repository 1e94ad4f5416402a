//! The viewer in a winit window: surface, input (egui first, then the fly
//! camera) and a blit of the viewer's offscreen frame to the surface.

use super::blit::Blit;
use super::{progress_printer, Summary, Viewer, ViewerError, ViewerOptions};
use glam::UVec2;
use std::sync::Arc;
use std::time::Instant;
use winit::application::ApplicationHandler;
use winit::dpi::PhysicalSize;
use winit::event::{ElementState, MouseButton, WindowEvent};
use winit::event_loop::{ActiveEventLoop, EventLoop};
use winit::keyboard::{KeyCode, PhysicalKey};
use winit::window::{Window, WindowId};

/// Opens a window on the built-in scene and runs until it is closed (or for
/// `options.frames` frames when that is not 0, then writes the screenshot if
/// asked). Fails with [`ViewerError::Window`], which says how to run headless,
/// when there is no display.
pub fn run_window(options: &ViewerOptions) -> Result<Summary, ViewerError> {
    let event_loop = EventLoop::new()
        .map_err(|e| ViewerError::Window(e.to_string().trim_end_matches('.').to_string()))?;
    let mut app = App {
        options: options.clone(),
        state: None,
        result: None,
    };
    event_loop
        .run_app(&mut app)
        .map_err(|e| ViewerError::Window(e.to_string()))?;
    app.result.unwrap_or_else(|| {
        Err(ViewerError::Window(
            "the event loop ended before a window opened".into(),
        ))
    })
}

struct App {
    options: ViewerOptions,
    state: Option<State>,
    result: Option<Result<Summary, ViewerError>>,
}

struct State {
    window: Arc<Window>,
    surface: wgpu::Surface<'static>,
    config: wgpu::SurfaceConfiguration,
    device: wgpu::Device,
    queue: wgpu::Queue,
    blit: Blit,
    viewer: Viewer,
    egui_state: egui_winit::State,
    last: Instant,
    looking: bool,
    cursor: Option<(f64, f64)>,
    frames: u64,
    // kept alive as long as the surface
    _instance: wgpu::Instance,
}

impl App {
    fn fail(&mut self, event_loop: &ActiveEventLoop, e: ViewerError) {
        self.result = Some(Err(e));
        event_loop.exit();
    }

    fn finish(&mut self, event_loop: &ActiveEventLoop) {
        if let Some(s) = &self.state {
            let shot = match &self.options.screenshot {
                Some(p) => s.viewer.screenshot(p),
                None => Ok(()),
            };
            self.result = Some(shot.map(|_| s.viewer.summary()));
        }
        event_loop.exit();
    }
}

impl ApplicationHandler for App {
    fn resumed(&mut self, event_loop: &ActiveEventLoop) {
        if self.state.is_some() {
            return;
        }
        match State::new(event_loop, &self.options) {
            Ok(s) => {
                s.window.request_redraw();
                self.state = Some(s);
            }
            Err(e) => self.fail(event_loop, e),
        }
    }

    fn window_event(&mut self, event_loop: &ActiveEventLoop, _id: WindowId, event: WindowEvent) {
        let Some(s) = self.state.as_mut() else {
            return;
        };
        let response = s.egui_state.on_window_event(&s.window, &event);
        match event {
            WindowEvent::CloseRequested => self.finish(event_loop),
            WindowEvent::Resized(size) => s.resize(size),
            WindowEvent::ScaleFactorChanged { scale_factor, .. } => {
                s.viewer.set_pixels_per_point(scale_factor as f32)
            }
            WindowEvent::KeyboardInput { event, .. } if !response.consumed => {
                let down = event.state == ElementState::Pressed;
                let k = &mut s.viewer.keys;
                match event.physical_key {
                    PhysicalKey::Code(KeyCode::KeyW) => k.forward = down,
                    PhysicalKey::Code(KeyCode::KeyS) => k.back = down,
                    PhysicalKey::Code(KeyCode::KeyA) => k.left = down,
                    PhysicalKey::Code(KeyCode::KeyD) => k.right = down,
                    PhysicalKey::Code(KeyCode::KeyE) => k.up = down,
                    PhysicalKey::Code(KeyCode::KeyQ) => k.down = down,
                    PhysicalKey::Code(KeyCode::ShiftLeft | KeyCode::ShiftRight) => k.fast = down,
                    PhysicalKey::Code(KeyCode::KeyP) if down && !event.repeat => {
                        s.viewer.toggle_path()
                    }
                    PhysicalKey::Code(KeyCode::KeyH) if down && !event.repeat => {
                        let shown = s.viewer.ui_shown();
                        s.viewer.set_ui(!shown)
                    }
                    PhysicalKey::Code(KeyCode::Escape) if down => self.finish(event_loop),
                    _ => {}
                }
            }
            WindowEvent::MouseInput { state, button, .. } => {
                let on_scene = !response.consumed && !s.viewer.egui().egui_wants_pointer_input();
                match (state, button) {
                    (ElementState::Pressed, MouseButton::Left | MouseButton::Right) if on_scene => {
                        s.looking = true
                    }
                    (ElementState::Released, _) => s.looking = false,
                    _ => {}
                }
            }
            WindowEvent::CursorMoved { position, .. } => {
                if let (true, Some((x, y))) = (s.looking, s.cursor) {
                    s.viewer
                        .camera
                        .look((position.x - x) as f32, (position.y - y) as f32);
                }
                s.cursor = Some((position.x, position.y));
            }
            WindowEvent::RedrawRequested => match s.redraw() {
                Ok(()) => {
                    s.frames += 1;
                    if self.options.frames > 0 && s.frames >= self.options.frames {
                        self.finish(event_loop);
                    }
                }
                Err(e) => self.fail(event_loop, e),
            },
            _ => {}
        }
    }

    fn about_to_wait(&mut self, _event_loop: &ActiveEventLoop) {
        if let Some(s) = &self.state {
            s.window.request_redraw();
        }
    }
}

impl State {
    fn new(event_loop: &ActiveEventLoop, options: &ViewerOptions) -> Result<Self, ViewerError> {
        let instance =
            wgpu::Instance::new(wgpu::InstanceDescriptor::new_with_display_handle_from_env(
                Box::new(event_loop.owned_display_handle()),
            ));
        let size = options.size;
        let window = Arc::new(
            event_loop
                .create_window(
                    Window::default_attributes()
                        .with_title("mipstream viewer")
                        .with_inner_size(PhysicalSize::new(size.x, size.y)),
                )
                .map_err(|e| ViewerError::Window(e.to_string()))?,
        );
        let surface = instance
            .create_surface(window.clone())
            .map_err(|e| ViewerError::Surface(e.to_string()))?;
        let adapter = pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
            power_preference: wgpu::PowerPreference::HighPerformance,
            compatible_surface: Some(&surface),
            ..Default::default()
        }))
        .map_err(|_| mipstream::gpu::GpuInitError::NoAdapter {
            backends: "any that can present to this window".into(),
            hint: mipstream::gpu::INSTALL_HINT,
        })?;
        let info = adapter.get_info();
        let adapter_desc = format!("{} ({:?})", info.name, info.backend);
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("mipstream viewer"),
            required_features: adapter.features() & mipstream::gpu::wanted_features(),
            required_limits: adapter.limits(),
            ..Default::default()
        }))
        .map_err(|source| mipstream::gpu::GpuInitError::RequestDevice {
            adapter: info.name.clone(),
            source,
        })?;
        window.set_title(&format!("mipstream viewer: {adapter_desc}"));
        let caps = surface.get_capabilities(&adapter);
        let format = caps
            .formats
            .iter()
            .copied()
            .find(|f| f.is_srgb())
            .or(caps.formats.first().copied())
            .ok_or_else(|| ViewerError::Surface("the surface offers no format".into()))?;
        let inner = window.inner_size();
        let config = wgpu::SurfaceConfiguration {
            usage: wgpu::TextureUsages::RENDER_ATTACHMENT,
            format,
            width: inner.width.max(1),
            height: inner.height.max(1),
            present_mode: wgpu::PresentMode::AutoVsync,
            desired_maximum_frame_latency: 2,
            alpha_mode: caps
                .alpha_modes
                .first()
                .copied()
                .unwrap_or(wgpu::CompositeAlphaMode::Auto),
            view_formats: vec![],
            color_space: wgpu::SurfaceColorSpace::Auto,
        };
        surface.configure(&device, &config);
        let mut viewer = Viewer::new(&device, &queue, adapter_desc, options, progress_printer())?;
        viewer.resize(UVec2::new(config.width, config.height));
        viewer.set_pixels_per_point(window.scale_factor() as f32);
        if options.render_scale.is_none() && info.device_type == wgpu::DeviceType::Cpu {
            // software rasterizers sample compressed textures slowly
            viewer.set_render_scale(0.5);
            eprintln!(
                "{}: a software adapter; rendering the scene at half resolution                  (the panel's render scale slider changes it)",
                viewer.adapter()
            );
        }
        let egui_state = egui_winit::State::new(
            viewer.egui().clone(),
            egui::ViewportId::ROOT,
            event_loop,
            Some(window.scale_factor() as f32),
            None,
            Some(device.limits().max_texture_dimension_2d as usize),
        );
        let blit = Blit::new(&device, format);
        Ok(Self {
            window,
            surface,
            config,
            device,
            queue,
            blit,
            viewer,
            egui_state,
            last: Instant::now(),
            looking: false,
            cursor: None,
            frames: 0,
            _instance: instance,
        })
    }

    fn resize(&mut self, size: PhysicalSize<u32>) {
        if size.width == 0 || size.height == 0 {
            return;
        }
        self.config.width = size.width;
        self.config.height = size.height;
        self.surface.configure(&self.device, &self.config);
        self.viewer.resize(UVec2::new(size.width, size.height));
    }

    fn redraw(&mut self) -> Result<(), ViewerError> {
        let now = Instant::now();
        // a long stall (window dragged, debugger) must not teleport the camera
        let dt = (now - self.last).as_secs_f32().min(0.1);
        self.last = now;
        let input = self.egui_state.take_egui_input(&self.window);
        let output = self.viewer.frame(dt, input)?;
        self.egui_state.handle_platform_output(&self.window, output);
        let frame = match self.surface.get_current_texture() {
            wgpu::CurrentSurfaceTexture::Success(t)
            | wgpu::CurrentSurfaceTexture::Suboptimal(t) => t,
            wgpu::CurrentSurfaceTexture::Outdated | wgpu::CurrentSurfaceTexture::Lost => {
                self.surface.configure(&self.device, &self.config);
                return Ok(());
            }
            wgpu::CurrentSurfaceTexture::Timeout | wgpu::CurrentSurfaceTexture::Occluded => {
                return Ok(())
            }
            other => {
                return Err(ViewerError::Surface(format!(
                    "acquiring the next frame: {other:?}"
                )))
            }
        };
        let view = frame.texture.create_view(&Default::default());
        let mut enc = self
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("mipstream viewer present"),
            });
        self.blit.draw(
            &self.device,
            &mut enc,
            self.viewer.frame_view(),
            &view,
            None,
        );
        self.queue.submit([enc.finish()]);
        self.window.pre_present_notify();
        self.queue.present(frame);
        Ok(())
    }
}
